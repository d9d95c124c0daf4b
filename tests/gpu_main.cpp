// SPDX-License-Identifier: Apache-2.0
// Entry point of `onecopy-tests-gpu`: probe for a CUDA device first and exit 77 (Meson's SKIP)
// with one line saying what is missing; otherwise load the defaults, register the CPU decoders
// (the reference every GPU test decodes with) and run the Catch2 session.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <cstdio>

#include "config/defaults.hpp"
#include "format/decode.hpp"
#include "kernels/device.hpp"

int main(int argc, char** argv) {
  const auto info = oc::kernels::probe_devices();
  if (info.count == 0) {
    std::printf("SKIP: no CUDA device: %s\n", info.why_none.c_str());
    return 77;
  }
  std::printf("CUDA device 0: %s (sm_%d%d), %d device(s)\n", info.name.c_str(), info.compute_major,
              info.compute_minor, info.count);
  if (auto r = oc::load_defaults_from_env(); !r.ok()) {
    std::fprintf(stderr, "%s\n", r.error().to_string().c_str());
    return 1;
  }
  oc::format::register_default_encodings();
  const int failed = Catch::Session().run(argc, argv);
  return failed == 0 ? 0 : 1;  // 77 failures must not read as a skip
}
