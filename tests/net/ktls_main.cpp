// SPDX-License-Identifier: Apache-2.0
// Catch2 v2 entry point for `onecopy-tests-ktls`: exits 77 (Meson's SKIP) when the kernel cannot
// attach the TLS ULP, since Catch2 v2 has no way to skip a test case.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <csignal>
#include <cstdio>

#include "config/defaults.hpp"
#include "net/ring.hpp"

int main(int argc, char** argv) {
  std::signal(SIGPIPE, SIG_IGN);
  if (auto r = oc::load_defaults_from_env(); !r.ok()) {
    std::fprintf(stderr, "%s\n", r.error().to_string().c_str());
    return 1;
  }
  if (!oc::net::ring_features().ktls) {
    std::printf(
        "SKIP: kernel TLS unavailable (setsockopt TCP_ULP \"tls\" fails; CONFIG_TLS off?)\n");
    return 77;
  }
  const int failed = Catch::Session().run(argc, argv);
  return failed == 0 ? 0 : 1;
}
