// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: the AWS shared config/credentials INI parser (net::fuzz_parse_aws_config).
#include <cstddef>
#include <cstdint>

#include "net/aws_config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  oc::net::fuzz_parse_aws_config({data, size});
  return 0;
}
