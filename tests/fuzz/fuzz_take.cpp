// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: open + take of scattered rows (format::fuzz_take): the encodings' take
// paths, which a full scan never runs. Structure-aware mutation as in fuzz_open_scan.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "config/defaults.hpp"
#include "format/fuzz.hpp"
#include "tests/fuzz/vortex_mutator.hpp"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  setenv("ONECOPY_MAX_DECODED_BYTES", "64MiB", 0);
  // One input at a time on one thread: the decode pool's own tests are in Catch2, and handing
  // small decodes to it only slows the campaign.
  setenv("ONECOPY_SCAN_DECODE_THREADS", "1", 0);
  return oc::load_defaults_from_env().ok() ? 0 : 1;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)oc::format::fuzz_take({data, size});
  return 0;
}
