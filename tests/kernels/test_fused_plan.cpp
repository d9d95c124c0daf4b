// SPDX-License-Identifier: Apache-2.0
// The fused-decode plan and its host executor, on the CPU: the executor runs the kernel's stage
// functions (kernels/fused_stages.hpp) in the kernel's tile order, so these tests check the
// kernel's arithmetic and indexing everywhere; onecopy-tests-gpu checks the launch itself.
#include <catch2/catch.hpp>

#include "kernels/fused_plan.hpp"
#include "tests/kernels/fused_cases.hpp"

using namespace oc;
using namespace oc::test;
using oc::kernels::build_fused_plan;
using oc::kernels::run_plan_on_host;

TEST_CASE("a fused plan run on the host equals the CPU decoder at every width, offset and chain",
          "[kernels][fused]") {
  for (const auto& c : fused_cases({0, 1, 1023, 1024, 1025, 5000}, /*every_width=*/true)) {
    INFO(c.name);
    format::DecodeContext ctx;
    auto plan = build_fused_plan(c.node, c.dtype, c.len, ctx);
    if (!plan.ok()) FAIL(plan.error().to_string());
    CHECK(plan->output_bytes() == c.len * format::fixed_width_of(*c.dtype));
    auto expected = decode(c.node, c.dtype, c.len);
    REQUIRE(expected.ok());
    auto got = run_plan_on_host(*plan);
    REQUIRE(got.ok());
    REQUIRE(compare_rows(buffer_bytes(*got), plan->validity, **expected) == "");
  }
}

TEST_CASE("a fused plan records its chain innermost op first", "[kernels][fused]") {
  std::mt19937_64 rng(1);
  auto n = node("vortex.zigzag", {}, {},
                {node("fastlanes.for", for_meta_unsigned(3), {},
                      {bitpacked_with_patches<uint32_t>(fitting_values<uint32_t>(3000, 7, rng), 7,
                                                        0, true, rng)})});
  format::DecodeContext ctx;
  auto plan = build_fused_plan(n, DType::make_primitive(PType::i32, false), 3000, ctx);
  REQUIRE(plan.ok());
  CHECK(plan->description == "vortex.zigzag > fastlanes.for > fastlanes.bitpacked");
  REQUIRE(plan->params.op_count == 2);
  CHECK(plan->params.ops[0].kind == kernels::FusedOpKind::frame_of_reference);
  CHECK(plan->params.ops[0].reference == 3);
  CHECK(plan->params.ops[1].kind == kernels::FusedOpKind::zigzag);
  CHECK(plan->params.source == kernels::FusedSource::bitpacked);
  CHECK(plan->params.bit_width == 7);
  // Rows 0, 1023, 1024, 2047, 2048 and 2999 are patched; positions include the offset (0).
  CHECK(plan->patch_positions == std::vector<uint64_t>{0, 1023, 1024, 2047, 2048, 2999});
  // Sizes come from the tree: 3 blocks of 128 x 7 bytes, 6 patches of 16 bytes, 3000 x 4 out.
  CHECK(plan->input_bytes() == 3 * 128 * 7 + 6 * 16);
  CHECK(plan->output_bytes() == 3000 * 4);
}

TEST_CASE("a fused plan refuses what it cannot fuse, and reports corrupt trees as the CPU does",
          "[kernels][fused]") {
  const auto i32 = DType::make_primitive(PType::i32, false);
  format::DecodeContext ctx;
  // An encoding that is not fused.
  CHECK(
      build_fused_plan(bool_node({true, false}), DType::make_bool(false), 2, ctx).error().code() ==
      Errc::unsupported);
  // A source's nulls travel as a bitmap; an all-valid validity child leaves none.
  auto nullable = DType::make_primitive(PType::i32, true);
  auto with_nulls = node("vortex.primitive", {}, {buffer_of(std::vector<int32_t>{1, 2})},
                         {bool_node({true, false})});
  auto plan_with_nulls = build_fused_plan(with_nulls, nullable, 2, ctx);
  REQUIRE(plan_with_nulls.ok());
  CHECK(plan_with_nulls->null_count == 1);
  CHECK(plan_with_nulls->validity.size() == 1);
  auto all_valid = node("vortex.primitive", {}, {buffer_of(std::vector<int32_t>{1, 2})},
                        {bool_node({true, true})});
  auto plan_all_valid = build_fused_plan(all_valid, nullable, 2, ctx);
  REQUIRE(plan_all_valid.ok());
  CHECK(plan_all_valid->validity.empty());
  // Null dictionary values are not fused yet.
  auto null_values = node("vortex.dict", fused_dict_meta(2, PType::u8), {},
                          {primitive_node<uint8_t>({0, 1}), with_nulls});
  CHECK(build_fused_plan(null_values, nullable, 2, ctx).error().code() == Errc::unsupported);
  // A bitpacked buffer of the wrong size is corrupt.
  auto short_buffer =
      node("fastlanes.bitpacked", bitpacked_meta<uint32_t>(5, 0), {Buffer::allocate(10)});
  CHECK(build_fused_plan(short_buffer, DType::make_primitive(PType::u32, false), 3, ctx)
            .error()
            .code() == Errc::corrupt);
  // Zigzag over an unsigned type is corrupt.
  auto zigzag_u32 = node("vortex.zigzag", {}, {}, {primitive_node<uint32_t>({1})});
  CHECK(build_fused_plan(zigzag_u32, DType::make_primitive(PType::u32, false), 1, ctx)
            .error()
            .code() == Errc::corrupt);
  // Five ops do not fit in one launch.
  ArrayView deep = primitive_node<uint32_t>({1});
  for (int i = 0; i < 5; ++i) deep = node("fastlanes.for", for_meta_unsigned(1), {}, {deep});
  CHECK(build_fused_plan(deep, DType::make_primitive(PType::u32, false), 1, ctx).error().code() ==
        Errc::unsupported);
}

TEST_CASE("a dict code out of range is corrupt in the fused plan as in the CPU decoder",
          "[kernels][fused]") {
  const auto i64 = DType::make_primitive(PType::i64, false);
  for (int32_t bad : {3, -1}) {
    INFO("code " << bad);
    auto n = node("vortex.dict", fused_dict_meta(3, PType::i32), {},
                  {primitive_node<int32_t>({0, 2, bad}), primitive_node<int64_t>({10, 20, 30})});
    CHECK(decode(n, i64, 3).error().code() == Errc::corrupt);
    format::DecodeContext ctx;
    auto plan = build_fused_plan(n, i64, 3, ctx);
    REQUIRE(plan.ok());
    CHECK(run_plan_on_host(*plan).error().code() == Errc::corrupt);
  }
}

TEST_CASE(
    "an ALP patch does not excuse a dict code out of range below it, as the CPU decoder does not",
    "[kernels][fused]") {
  // alp(dict(codes, values)) with code 9 (of 3 values) at row 1, which ALP patches: the CPU
  // decodes the dict child before patching, so the file is corrupt. Only ALP-RD's placeholder
  // codes are excused (kernels/alprd_host.cpp), and its CPU decoder excuses them too.
  const auto f64 = DType::make_primitive(PType::f64, false);
  auto codes = primitive_node<uint8_t>({0, 9, 2, 1});
  auto tree = alp_node(node("vortex.dict", fused_dict_meta(3, PType::u8), {},
                            {codes, primitive_node<int64_t>({5, 6, 7})}),
                       0, 0, false, {1});
  CHECK(decode(tree, f64, 4).error().code() == Errc::corrupt);
  format::DecodeContext ctx;
  auto plan = build_fused_plan(tree, f64, 4, ctx);
  REQUIRE(plan.ok());
  CHECK_FALSE(plan->params.out_patches_cover_codes);
  CHECK(run_plan_on_host(*plan).error().code() == Errc::corrupt);
}

TEST_CASE("a patch over a null row makes it valid in the plan, as on the CPU", "[kernels][fused]") {
  // bitpacked u32 w3, rows 0..9, row 4 null underneath and patched with 1000: valid, 1000.
  std::mt19937_64 rng(7);
  std::vector<uint32_t> values(10, 5);
  auto packed = bitpacked_node<uint32_t>(values, 3, 0);
  pb::BitPackedMetadata m;
  m.set_bit_width(3);
  m.mutable_patches()->set_len(1);
  m.mutable_patches()->set_indices_ptype(static_cast<uint32_t>(PType::u64));
  const std::string meta = m.SerializeAsString();
  packed.metadata.assign(meta.begin(), meta.end());
  std::vector<bool> valid(10, true);
  valid[4] = valid[7] = false;
  packed.children = {primitive_node<uint64_t>({4}), primitive_node<uint32_t>({1000}),
                     bool_node(valid)};
  const auto u32 = DType::make_primitive(PType::u32, true);
  auto expected = decode(packed, u32, 10);
  REQUIRE(expected.ok());
  REQUIRE((*expected)->is_valid(4));
  format::DecodeContext ctx;
  auto plan = build_fused_plan(packed, u32, 10, ctx);
  REQUIRE(plan.ok());
  CHECK(plan->null_count == 1);  // row 7 only
  auto got = run_plan_on_host(*plan);
  REQUIRE(got.ok());
  CHECK(compare_rows(buffer_bytes(*got), plan->validity, **expected) == "");
  CHECK(reinterpret_cast<const uint32_t*>(got->data())[4] == 1000);
}

TEST_CASE("a batch of plans run as one launch equals each plan run alone", "[kernels][fused]") {
  // Every chain at lengths that leave plans of zero, one and many tiles next to each other, in
  // one batch whose block-tiles map back to their plans (kernels/fused_block.hpp).
  std::vector<FusedCase> cases = fused_cases({0, 1, 1025, 3000}, /*every_width=*/false);
  std::vector<kernels::FusedPlan> plans;
  for (const auto& c : cases) {
    format::DecodeContext ctx;
    auto plan = build_fused_plan(c.node, c.dtype, c.len, ctx);
    if (!plan.ok()) FAIL(c.name << ": " << plan.error().to_string());
    plans.push_back(std::move(plan).value());
  }
  std::vector<const kernels::FusedPlan*> batch;
  for (const auto& p : plans) batch.push_back(&p);
  auto outs = kernels::run_batch_on_host(batch);
  REQUIRE(outs.ok());
  REQUIRE(outs->size() == plans.size());
  for (size_t i = 0; i < plans.size(); ++i) {
    INFO(cases[i].name);
    auto alone = run_plan_on_host(plans[i]);
    REQUIRE(alone.ok());
    CHECK(buffer_bytes((*outs)[i]) == buffer_bytes(*alone));
  }
}

TEST_CASE("a batch names the plan whose dict code is out of range", "[kernels][fused]") {
  const auto i64 = DType::make_primitive(PType::i64, false);
  auto good = three_value_dict(2);
  auto bad = three_value_dict(3);
  format::DecodeContext ctx;
  auto a = build_fused_plan(good, i64, 3, ctx);
  auto b = build_fused_plan(bad, i64, 3, ctx);
  REQUIRE((a.ok() && b.ok()));
  const kernels::FusedPlan* both[] = {&*a, &*b};
  CHECK(kernels::run_batch_on_host(both).error().code() == Errc::corrupt);
  const kernels::FusedPlan* good_only[] = {&*a, &*a};
  CHECK(kernels::run_batch_on_host(good_only).ok());
}
