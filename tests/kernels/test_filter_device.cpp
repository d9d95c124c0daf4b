// SPDX-License-Identifier: Apache-2.0
// The GPU filter (selection kernel + CUB compaction) against select_on_host, fed by the fused
// decode so that values never visit the host between decode and filter; with nulls, the decode's
// validity bitmap goes to both, and neither may select a null row.
#include <cuda_runtime.h>

#include <catch2/catch.hpp>

#include "kernels/filter.hpp"
#include "kernels/fused_decode.hpp"
#include "tests/kernels/fused_cases.hpp"

using namespace oc;
using namespace oc::test;

namespace {

// Decodes the i32 column @p n (@p len rows of type @p dtype) on the host and on the device,
// filters each with @p p and the plan's validity, and checks the device's mask, count and
// compacted values against the host reference's, and that no null row was selected.
// @return how many null rows hold a value for which @p p holds (a filter that ignored validity
// would select them).
uint64_t check_filter_i32(const ArrayView& n, const DTypePtr& dtype, uint64_t len,
                          const kernels::Predicate& p) {
  format::DecodeContext ctx;
  auto plan = kernels::build_fused_plan(n, dtype, len, ctx);
  REQUIRE(plan.ok());
  auto host = kernels::run_plan_on_host(*plan);
  REQUIRE(host.ok());
  const uint8_t* validity = plan->validity.empty() ? nullptr : plan->validity.data();
  auto mask = kernels::select_on_host(p, host->data(), validity, len);
  REQUIRE(mask.ok());
  auto holds = kernels::select_on_host(p, host->data(), nullptr, len);
  REQUIRE(holds.ok());
  std::vector<int32_t> expected;
  uint64_t null_rows_holding = 0;
  for (uint64_t i = 0; i < len; ++i) {
    if ((*mask)[i]) expected.push_back(host->as<int32_t>()[i]);
    if (!kernels::filter_valid(validity, i)) null_rows_holding += (*holds)[i];
  }

  auto stream = kernels::Stream::create();
  REQUIRE(stream.ok());
  auto col = kernels::decode_on_device(*plan, *stream);
  REQUIRE(col.ok());
  REQUIRE((col->validity.data() == nullptr) == (validity == nullptr));
  auto filtered =
      kernels::filter_on_device(p, col->values.data(), col->validity.as<uint8_t>(), len, *stream);
  REQUIRE(filtered.ok());
  auto count = filtered->count(*stream);
  REQUIRE(count.ok());
  REQUIRE(*count == expected.size());
  std::vector<uint8_t> got_mask(len);
  std::vector<int32_t> got(expected.size());
  if (len > 0) {
    REQUIRE(cudaMemcpy(got_mask.data(), filtered->mask.data(), len, cudaMemcpyDeviceToHost) ==
            cudaSuccess);
  }
  if (!got.empty()) {
    REQUIRE(cudaMemcpy(got.data(), filtered->values.data(), got.size() * 4,
                       cudaMemcpyDeviceToHost) == cudaSuccess);
  }
  CHECK(got_mask == *mask);
  CHECK(got == expected);
  uint64_t nulls_selected = 0;
  for (uint64_t i = 0; i < len; ++i)
    nulls_selected += !kernels::filter_valid(validity, i) && got_mask[i];
  CHECK(nulls_selected == 0);
  REQUIRE(col->finish(*stream).ok());
  return null_rows_holding;
}

}  // namespace

TEST_CASE("the GPU filter selects and compacts like the host reference", "[kernels][gpu][filter]") {
  for (uint64_t len : {uint64_t{0}, uint64_t{1}, uint64_t{1025}, uint64_t{3'000'001}}) {
    INFO("len " << len);
    std::mt19937_64 rng(len);
    auto values = fitting_values<int32_t>(len, 12, rng);
    auto n = node("fastlanes.for", for_meta_signed(-2000), {},
                  {bitpacked_with_patches<int32_t>(values, 12, 0, true, rng)});
    const kernels::Predicate p{kernels::CompareOp::lt, kernels::ValueKind::signed_int, 4,
                               static_cast<uint64_t>(int64_t{100})};
    check_filter_i32(n, DType::make_primitive(PType::i32, false), len, p);
  }
}

TEST_CASE("the GPU filter never selects a null row, for every op, like the host reference",
          "[kernels][gpu][filter]") {
  // FoR -70 over 9-bit values: rows in [-70, 441], one in three null, so every op against 100
  // holds on many valid rows and on many null ones.
  const kernels::CompareOp ops[] = {kernels::CompareOp::eq, kernels::CompareOp::ne,
                                    kernels::CompareOp::lt, kernels::CompareOp::le,
                                    kernels::CompareOp::gt, kernels::CompareOp::ge};
  for (kernels::CompareOp op : ops) {
    INFO("op " << static_cast<int>(op));
    const kernels::Predicate p{op, kernels::ValueKind::signed_int, 4,
                               static_cast<uint64_t>(int64_t{100})};
    uint64_t null_rows_holding = 0;
    for (uint64_t len : {uint64_t{1}, uint64_t{1025}, uint64_t{3'000'001}}) {
      INFO("len " << len);
      std::mt19937_64 rng(len);
      ArrayView packed =
          bitpacked_with_patches<int32_t>(fitting_values<int32_t>(len, 9, rng), 9, 0, false, rng);
      packed.children.push_back(bool_node(random_validity(len, 3, rng)));
      auto n = node("fastlanes.for", for_meta_signed(-70), {}, {packed});
      null_rows_holding += check_filter_i32(n, DType::make_primitive(PType::i32, true), len, p);
    }
    CHECK(null_rows_holding > 0);
  }
}
