// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: every S3 XML body parser (net::fuzz_parse_s3_xml).
#include <cstddef>
#include <cstdint>

#include "net/s3_xml.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  oc::net::fuzz_parse_s3_xml({data, size});
  return 0;
}
