// SPDX-License-Identifier: Apache-2.0
// Catch2 v2 entry point for `onecopy-tests-ktls-fallback`: exits 77 (Meson's SKIP) where the
// kernel can attach the TLS ULP, because the fallback to userspace TLS cannot happen there;
// `onecopy-tests-ktls` runs on such machines instead, so one of the two always runs.
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
  if (oc::net::ring_features().ktls) {
    std::printf(
        "SKIP: kernel TLS is available (setsockopt TCP_ULP \"tls\" succeeds); the userspace "
        "fallback cannot be reached, onecopy-tests-ktls runs instead\n");
    return 77;
  }
  const int failed = Catch::Session().run(argc, argv);
  return failed == 0 ? 0 : 1;
}
