// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: open + full scan of arbitrary bytes (format::fuzz_open_scan), mutated with
// the structure-aware Vortex mutator so that mutations reach the decoders.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "config/defaults.hpp"
#include "format/fuzz.hpp"
#include "tests/fuzz/vortex_mutator.hpp"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // Keep every legitimate allocation far below libFuzzer's RSS limit.
  setenv("ONECOPY_MAX_DECODED_BYTES", "64MiB", 0);
  // One input at a time on one thread: the decode pool's own tests are in Catch2, and handing
  // small decodes to it only slows the campaign.
  setenv("ONECOPY_SCAN_DECODE_THREADS", "1", 0);
  return oc::load_defaults_from_env().ok() ? 0 : 1;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)oc::format::fuzz_open_scan({data, size});
  return 0;
}
