// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: URL, s3:// URI and percent-decoding parsing (net::fuzz_parse_url).
#include <cstddef>
#include <cstdint>

#include "net/url.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  oc::net::fuzz_parse_url({data, size});
  return 0;
}
