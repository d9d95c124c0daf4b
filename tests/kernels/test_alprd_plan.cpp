// SPDX-License-Identifier: Apache-2.0
// The GPU ALP-RD decode's plan and host executor (the kernels' stage code) against the CPU.
#include <catch2/catch.hpp>

#include "kernels/alprd.hpp"
#include "tests/kernels/alprd_cases.hpp"

using namespace oc;
using namespace oc::test;

TEST_CASE("an ALP-RD plan run on the host equals the CPU decoder, bit for bit",
          "[kernels][alprd]") {
  for (uint64_t len : {0, 1, 1023, 1024, 1025, 5000}) {
    for (bool f32 : {false, true}) {
      for (bool nulls : {false, true}) {
        INFO("len " << len << " f32 " << f32 << " nulls " << nulls);
        std::mt19937_64 rng(len * 4 + f32 * 2 + nulls);
        auto n = alprd_rows(len, f32, nulls, rng);
        const auto t = DType::make_primitive(f32 ? PType::f32 : PType::f64, nulls);
        format::DecodeContext ctx;
        auto plan = kernels::build_alprd_plan(n, t, len, ctx);
        if (!plan.ok()) FAIL(plan.error().to_string());
        auto expected = decode(n, t, len);
        REQUIRE(expected.ok());
        auto got = kernels::run_alprd_on_host(*plan);
        REQUIRE(got.ok());
        REQUIRE(compare_rows(buffer_bytes(*got), plan->left.validity, **expected) == "");
      }
    }
  }
}

TEST_CASE("an ALP-RD code outside the dictionary is corrupt unless patched or null",
          "[kernels][alprd]") {
  std::mt19937_64 rng(9);
  auto n = alprd_rows(300, false, false, rng);
  // Drop the patches: row 3's placeholder code 6 is now unexplained.
  pb::ALPRDMetadata m;
  REQUIRE(m.ParseFromArray(n.metadata.data(), static_cast<int>(n.metadata.size())));
  m.clear_patches();
  const std::string s = m.SerializeAsString();
  n.metadata.assign(s.begin(), s.end());
  n.children.resize(2);
  const auto t = DType::make_primitive(PType::f64, false);
  CHECK(decode(n, t, 300).error().code() == Errc::corrupt);
  format::DecodeContext ctx;
  auto plan = kernels::build_alprd_plan(n, t, 300, ctx);
  REQUIRE(plan.ok());
  CHECK(kernels::run_alprd_on_host(*plan).error().code() == Errc::corrupt);
}
