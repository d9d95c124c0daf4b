// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: onecopyd's frame parser (daemon::fuzz_parse_frame).
#include <cstddef>
#include <cstdint>

#include "daemon/wire.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  oc::daemon::fuzz_parse_frame({data, size});
  return 0;
}
