// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: the filter-expression parser and printer (format::fuzz_parse_expr).
#include <cstddef>
#include <cstdint>

#include "format/expr_parser.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)oc::format::fuzz_parse_expr({data, size});
  return 0;
}
