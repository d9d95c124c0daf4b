// SPDX-License-Identifier: Apache-2.0
// The string dictionary decode's plan and host executor (the GPU's row functions) against the
// CPU decoder.
#include <catch2/catch.hpp>

#include "kernels/string_dict.hpp"
#include "tests/kernels/string_dict_cases.hpp"

using namespace oc;
using namespace oc::test;

TEST_CASE("a string dictionary run on the host equals the CPU decoder", "[kernels][string_dict]") {
  for (uint64_t len : {0, 1, 1023, 1024, 1025, 5000}) {
    for (const auto& c : string_dict_cases(len)) {
      INFO(c.name);
      format::DecodeContext ctx;
      auto plan = kernels::build_string_dict_plan(c.node, c.dtype, c.len, ctx);
      if (!plan.ok()) FAIL(plan.error().to_string());
      CHECK(plan->data_bytes_bound() >= len * 17);  // "DELIVER IN PERSON" bounds it from below
      auto expected = decode(c.node, c.dtype, c.len);
      REQUIRE(expected.ok());
      auto got = kernels::run_string_dict_on_host(*plan);
      REQUIRE(got.ok());
      REQUIRE(compare_strings(got->offsets, got->data, got->validity, **expected) == "");
    }
  }
}

TEST_CASE("a string dictionary refuses numeric values and reports bad codes",
          "[kernels][string_dict]") {
  format::DecodeContext ctx;
  auto numeric = node("vortex.dict", fused_dict_meta(2, PType::u8), {},
                      {primitive_node<uint8_t>({0, 1}), primitive_node<int32_t>({5, 6})});
  CHECK(kernels::build_string_dict_plan(numeric, DType::make_primitive(PType::i32, false), 2, ctx)
            .error()
            .code() == Errc::unsupported);
  auto bad = node("vortex.dict", fused_dict_meta(2, PType::u8), {},
                  {primitive_node<uint8_t>({0, 2}), utf8_varbin({"a", "b"})});
  auto plan = kernels::build_string_dict_plan(bad, DType::make_utf8(false), 2, ctx);
  REQUIRE(plan.ok());
  CHECK(kernels::run_string_dict_on_host(*plan).error().code() == Errc::corrupt);
}
