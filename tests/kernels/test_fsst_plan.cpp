// SPDX-License-Identifier: Apache-2.0
// The GPU FSST decode's plan and host executor (the kernel's row function) against the CPU
// decoder.
#include <catch2/catch.hpp>

#include "kernels/fsst.hpp"
#include "tests/kernels/fsst_cases.hpp"

using namespace oc;
using namespace oc::test;

TEST_CASE("an FSST plan run on the host equals the CPU decoder", "[kernels][fsst]") {
  for (uint64_t len : {0, 1, 1023, 1024, 1025, 5000}) {
    for (bool nulls : {false, true}) {
      INFO("len " << len << " nulls " << nulls);
      std::mt19937_64 rng(len + nulls);
      auto n = fsst_rows(len, nulls, rng);
      const auto t = DType::make_utf8(nulls);
      format::DecodeContext ctx;
      auto plan = kernels::build_fsst_plan(n, t, len, ctx);
      if (!plan.ok()) FAIL(plan.error().to_string());
      auto expected = decode(n, t, len);
      REQUIRE(expected.ok());
      auto got = kernels::run_fsst_on_host(*plan);
      REQUIRE(got.ok());
      REQUIRE(compare_strings(plan->offsets, *got, plan->validity, **expected) == "");
    }
  }
}

TEST_CASE("an FSST plan reports corrupt rows as the CPU decoder does", "[kernels][fsst]") {
  pb::FsstMetadata m;
  m.set_uncompressed_lengths_ptype(static_cast<uint32_t>(PType::u32));
  m.set_codes_offsets_ptype(static_cast<uint32_t>(PType::u32));
  auto fsst = [&](std::vector<uint8_t> codes, std::vector<uint32_t> offsets,
                  std::vector<uint32_t> lengths) {
    return node("vortex.fsst", m.SerializeAsString(),
                {buffer_of(kFsstSymbols), buffer_of(kFsstLengths), buffer_of(codes)},
                {primitive_node(lengths), primitive_node(offsets)});
  };
  const auto t = DType::make_utf8(false);
  // A length that disagrees with the codes, an unknown code, a dangling escape, codes past the end.
  for (const auto& n : {fsst({1}, {0, 1}, {4}), fsst({7}, {0, 1}, {1}), fsst({255}, {0, 1}, {1}),
                        fsst({1}, {0, 2}, {5})}) {
    CHECK(decode(n, t, 1).error().code() == Errc::corrupt);
    format::DecodeContext ctx;
    auto plan = kernels::build_fsst_plan(n, t, 1, ctx);
    REQUIRE(plan.ok());
    CHECK(kernels::run_fsst_on_host(*plan).error().code() == Errc::corrupt);
  }
}
