// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: multipart/byteranges bodies deframed into range slots
// (net::fuzz_deframe_byteranges).
#include <cstddef>
#include <cstdint>

#include "net/byteranges.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)oc::net::fuzz_deframe_byteranges({data, size});
  return 0;
}
