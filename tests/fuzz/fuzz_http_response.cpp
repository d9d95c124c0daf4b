// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: HTTP/1.1 response parsing, fed in two pieces (net::fuzz_parse_response).
#include <cstddef>
#include <cstdint>

#include "net/http_response.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  (void)oc::net::fuzz_parse_response({data + 1, size - 1}, data[0]);
  return 0;
}
