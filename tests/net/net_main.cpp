// SPDX-License-Identifier: Apache-2.0
// Catch2 v2 entry point for `onecopy-tests-net`: the network stack over loopback, no servers
// beyond what the tests start themselves.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <csignal>
#include <cstdio>

#include "config/defaults.hpp"

int main(int argc, char** argv) {
  // A peer that closes early must surface as an error from send, not kill the process.
  std::signal(SIGPIPE, SIG_IGN);
  if (auto r = oc::load_defaults_from_env(); !r.ok()) {
    std::fprintf(stderr, "%s\n", r.error().to_string().c_str());
    return 1;
  }
  const int failed = Catch::Session().run(argc, argv);
  return failed == 0 ? 0 : 1;
}
