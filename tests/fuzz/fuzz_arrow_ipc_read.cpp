// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: Arrow IPC streams (format/arrow_ipc_read, oc::format::fuzz_read_arrow_ipc).
#include <cstddef>
#include <cstdint>

#include "format/arrow_ipc_fuzz.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)oc::format::fuzz_read_arrow_ipc({data, size});
  return 0;
}
