// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: open + full scan of arbitrary bytes (format::fuzz_open_scan).
#include <cstddef>
#include <cstdint>

#include "format/fuzz.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)oc::format::fuzz_open_scan({data, size});
  return 0;
}
