// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: pcodec chunk metas and pages (format/pcodec, oc::format::pcodec::fuzz_decode).
#include <cstddef>
#include <cstdint>

#include "format/pcodec/fuzz.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)oc::format::pcodec::fuzz_decode({data, size});
  return 0;
}
