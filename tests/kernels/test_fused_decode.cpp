// SPDX-License-Identifier: Apache-2.0
// The fused decode kernel against the CPU decoders, bit for bit (onecopy-tests-gpu: SKIPs with
// exit 77 without a CUDA device).
#include <cuda_runtime.h>

#include <catch2/catch.hpp>

#include "kernels/fused_decode.hpp"
#include "tests/kernels/fused_cases.hpp"

using namespace oc;
using namespace oc::test;

namespace {

void check_on_device(const std::vector<FusedCase>& cases) {
  for (const auto& c : cases) {
    INFO(c.name);
    format::DecodeContext ctx;
    auto plan = kernels::build_fused_plan(c.node, c.dtype, c.len, ctx);
    REQUIRE(plan.ok());
    auto expected = decode(c.node, c.dtype, c.len);
    REQUIRE(expected.ok());
    auto got = kernels::decode_on_device_to_host(*plan);
    REQUIRE(got.ok());
    REQUIRE(compare_rows(buffer_bytes(*got), plan->validity, **expected) == "");
  }
}

}  // namespace

TEST_CASE("the fused kernel equals the CPU decoder at every width, offset and chain",
          "[kernels][gpu][fused]") {
  check_on_device(fused_cases({0, 1, 1023, 1024, 1025, 5000}, /*every_width=*/true));
}

TEST_CASE("the fused kernel equals the CPU decoder on millions of rows", "[kernels][gpu][fused]") {
  check_on_device(fused_cases({3'000'001}, /*every_width=*/false));
  // Past kMaxGridBlocks x 1024 rows, so the grid-stride loop runs more than once.
  const uint64_t len = 70'000'000;
  std::vector<uint8_t> bytes(len);
  std::mt19937_64 rng(len);
  for (auto& b : bytes) b = static_cast<uint8_t>(rng());
  check_on_device(
      {{"for u8 > primitive, 70M rows",
        node("fastlanes.for", for_meta_unsigned(77), {}, {primitive_node<uint8_t>(bytes)}),
        DType::make_primitive(PType::u8, false), len}});
}

TEST_CASE("the fused kernel reports a dict code out of range as corrupt", "[kernels][gpu][fused]") {
  const auto i64 = DType::make_primitive(PType::i64, false);
  for (int32_t bad : {3, -1}) {
    INFO("code " << bad);
    auto n = node("vortex.dict", fused_dict_meta(3, PType::i32), {},
                  {primitive_node<int32_t>({0, 2, bad}), primitive_node<int64_t>({10, 20, 30})});
    format::DecodeContext ctx;
    auto plan = kernels::build_fused_plan(n, i64, 3, ctx);
    REQUIRE(plan.ok());
    CHECK(kernels::decode_on_device_to_host(*plan).error().code() == Errc::corrupt);
  }
}

TEST_CASE("a decode session keeps many decodes in flight over its streams and staging buffers",
          "[kernels][gpu][fused]") {
  // 1 MiB of staging per stream: the 3M-row cases pin their own, the small ones reuse the slots.
  auto session = kernels::DecodeSession::create({3, 1 << 20});
  REQUIRE(session.ok());
  const auto cases = fused_cases({1025, 5000, 3'000'001}, /*every_width=*/false);
  std::vector<kernels::FusedPlan> plans;
  std::vector<kernels::DeviceColumn> columns;
  for (const auto& c : cases) {
    format::DecodeContext ctx;
    auto plan = kernels::build_fused_plan(c.node, c.dtype, c.len, ctx);
    REQUIRE(plan.ok());
    plans.push_back(std::move(*plan));
  }
  for (const auto& plan : plans) {
    auto col = session->decode(plan);
    REQUIRE(col.ok());
    columns.push_back(std::move(*col));
  }
  for (size_t i = 0; i < cases.size(); ++i) {
    INFO(cases[i].name);
    REQUIRE(session->finish(columns[i]).ok());
    std::vector<uint8_t> got(plans[i].output_bytes());
    if (!got.empty()) {
      REQUIRE(cudaMemcpy(got.data(), columns[i].values.data(), got.size(),
                         cudaMemcpyDeviceToHost) == cudaSuccess);
    }
    auto expected = decode(cases[i].node, cases[i].dtype, cases[i].len);
    REQUIRE(expected.ok());
    REQUIRE(compare_rows(got, plans[i].validity, **expected) == "");
    std::vector<uint8_t> validity(columns[i].validity.size());
    if (!validity.empty()) {
      REQUIRE(cudaMemcpy(validity.data(), columns[i].validity.data(), validity.size(),
                         cudaMemcpyDeviceToHost) == cudaSuccess);
    }
    CHECK(validity == buffer_bytes(plans[i].validity));
  }
}

TEST_CASE("a batch decodes every plan with one upload and one launch, as the host batch does",
          "[kernels][gpu][fused]") {
  auto session = kernels::DecodeSession::create({2, 1 << 20});
  REQUIRE(session.ok());
  const auto cases = fused_cases({0, 1, 1025, 5000, 300'001}, /*every_width=*/false);
  std::vector<kernels::FusedPlan> plans;
  for (const auto& c : cases) {
    format::DecodeContext ctx;
    auto plan = kernels::build_fused_plan(c.node, c.dtype, c.len, ctx);
    REQUIRE(plan.ok());
    plans.push_back(std::move(*plan));
  }
  std::vector<const kernels::FusedPlan*> pointers;
  for (const auto& p : plans) pointers.push_back(&p);
  auto batch = session->decode_batch(pointers);
  REQUIRE(batch.ok());
  REQUIRE(session->finish(*batch).ok());
  auto host = kernels::run_batch_on_host(pointers);
  REQUIRE(host.ok());
  for (size_t i = 0; i < cases.size(); ++i) {
    INFO(cases[i].name);
    std::vector<uint8_t> got(plans[i].output_bytes());
    if (!got.empty()) {
      REQUIRE(cudaMemcpy(got.data(), batch->columns[i].values.data(), got.size(),
                         cudaMemcpyDeviceToHost) == cudaSuccess);
    }
    CHECK(got == buffer_bytes((*host)[i]));
    std::vector<uint8_t> validity(batch->columns[i].validity.size());
    if (!validity.empty()) {
      REQUIRE(cudaMemcpy(validity.data(), batch->columns[i].validity.data(), validity.size(),
                         cudaMemcpyDeviceToHost) == cudaSuccess);
    }
    CHECK(validity == buffer_bytes(plans[i].validity));
  }
}

TEST_CASE("a batch reports the plan whose dict code is out of range", "[kernels][gpu][fused]") {
  auto session = kernels::DecodeSession::create({1, 1 << 20});
  REQUIRE(session.ok());
  const auto i64 = DType::make_primitive(PType::i64, false);
  auto good = three_value_dict(2);
  auto bad = three_value_dict(3);
  format::DecodeContext ctx;
  auto a = kernels::build_fused_plan(good, i64, 3, ctx);
  auto b = kernels::build_fused_plan(bad, i64, 3, ctx);
  REQUIRE((a.ok() && b.ok()));
  const kernels::FusedPlan* both[] = {&*a, &*b};
  auto batch = session->decode_batch(both);
  REQUIRE(batch.ok());
  auto finished = session->finish(*batch);
  REQUIRE_FALSE(finished.ok());
  CHECK(finished.error().code() == Errc::corrupt);
  CHECK_THAT(finished.error().message(), Catch::Contains("plan 1"));
}
