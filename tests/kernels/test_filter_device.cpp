// SPDX-License-Identifier: Apache-2.0
// The GPU filter (selection kernel + CUB compaction) against select_on_host, fed by the fused
// decode so that values never visit the host between decode and filter.
#include <catch2/catch.hpp>

#include <cuda_runtime.h>

#include "kernels/filter.hpp"
#include "kernels/fused_decode.hpp"
#include "tests/kernels/fused_cases.hpp"

using namespace oc;
using namespace oc::test;

TEST_CASE("the GPU filter selects and compacts like the host reference", "[kernels][gpu][filter]") {
  for (uint64_t len : {uint64_t{0}, uint64_t{1}, uint64_t{1025}, uint64_t{3'000'001}}) {
    INFO("len " << len);
    std::mt19937_64 rng(len);
    auto values = fitting_values<int32_t>(len, 12, rng);
    auto n = node("fastlanes.for", for_meta_signed(-2000), {}, {bitpacked_with_patches<int32_t>(values, 12, 0, true, rng)});
    const auto i32 = DType::make_primitive(PType::i32, false);
    format::DecodeContext ctx;
    auto plan = kernels::build_fused_plan(n, i32, len, ctx);
    REQUIRE(plan.ok());
    auto host = kernels::run_plan_on_host(*plan);
    REQUIRE(host.ok());
    const kernels::Predicate p{kernels::CompareOp::lt, kernels::ValueKind::signed_int, 4, static_cast<uint64_t>(int64_t{100})};
    auto mask = kernels::select_on_host(p, host->data(), len);
    REQUIRE(mask.ok());
    std::vector<int32_t> expected;
    for (uint64_t i = 0; i < len; ++i) {
      if ((*mask)[i]) expected.push_back(host->as<int32_t>()[i]);
    }

    auto stream = kernels::Stream::create();
    REQUIRE(stream.ok());
    auto col = kernels::decode_on_device(*plan, *stream);
    REQUIRE(col.ok());
    auto filtered = kernels::filter_on_device(p, col->values.data(), len, *stream);
    REQUIRE(filtered.ok());
    auto count = filtered->count(*stream);
    REQUIRE(count.ok());
    REQUIRE(*count == expected.size());
    std::vector<uint8_t> got_mask(len);
    std::vector<int32_t> got(expected.size());
    if (len > 0) {
      REQUIRE(cudaMemcpy(got_mask.data(), filtered->mask.data(), len, cudaMemcpyDeviceToHost) == cudaSuccess);
    }
    if (!got.empty()) {
      REQUIRE(cudaMemcpy(got.data(), filtered->values.data(), got.size() * 4, cudaMemcpyDeviceToHost) == cudaSuccess);
    }
    CHECK(got_mask == *mask);
    CHECK(got == expected);
    REQUIRE(col->finish(*stream).ok());
  }
}
