// SPDX-License-Identifier: Apache-2.0
// Entry point of `onecopy-tests-s3`: the S3 client against real servers. Meson runs it without
// a server and it reports SKIP (77); tests/net/test_s3_servers.py runs it per server.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <csignal>
#include <cstdio>
#include <cstdlib>

#include "config/defaults.hpp"

int main(int argc, char** argv) {
  if (std::getenv("OC_S3_ENDPOINT") == nullptr) {
    std::puts(
        "SKIP: OC_S3_ENDPOINT is not set; tests/net/test_s3_servers.py starts the servers "
        "and runs these tests against each");
    return 77;
  }
  std::signal(SIGPIPE, SIG_IGN);
  if (auto r = oc::load_defaults_from_env(); !r.ok()) {
    std::fprintf(stderr, "%s\n", r.error().to_string().c_str());
    return 1;
  }
  const int failed = Catch::Session().run(argc, argv);
  return failed == 0 ? 0 : 1;
}
