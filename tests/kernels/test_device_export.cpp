// SPDX-License-Identifier: Apache-2.0
// Arrow C Device and DLPack exports of a column decoded on the GPU (onecopy-tests-gpu).
#include <cuda_runtime.h>

#include <catch2/catch.hpp>

#include "kernels/device_export.hpp"
#include "tests/kernels/fused_cases.hpp"

using namespace oc;
using namespace oc::test;

namespace {

// A FoR > bitpacked i32 column of @p len rows, decoded on @p stream; its CPU decode in @p want.
kernels::DeviceColumn decoded(uint64_t len, bool nulls, kernels::Stream& stream, ColumnPtr& want) {
  std::mt19937_64 rng(len);
  ArrayView packed =
      bitpacked_with_patches<int32_t>(fitting_values<int32_t>(len, 10, rng), 10, 0, true, rng);
  if (nulls) packed.children.push_back(bool_node(random_validity(len, 4, rng)));
  auto n = node("fastlanes.for", for_meta_signed(-5), {}, {packed});
  const auto t = DType::make_primitive(PType::i32, nulls);
  format::DecodeContext ctx;
  auto plan = kernels::build_fused_plan(n, t, len, ctx);
  REQUIRE(plan.ok());
  auto cpu = decode(n, t, len);
  REQUIRE(cpu.ok());
  want = *cpu;
  auto col = kernels::decode_on_device(*plan, stream);
  REQUIRE(col.ok());
  REQUIRE(stream.synchronize().ok());  // the plan's host buffers go away on return
  return std::move(*col);
}

}  // namespace

TEST_CASE("a decoded column exports as an Arrow C Device array", "[kernels][gpu][export]") {
  auto stream = kernels::Stream::create();
  REQUIRE(stream.ok());
  ColumnPtr want;
  auto col = decoded(5000, /*nulls=*/true, *stream, want);
  ArrowDeviceArray out{};
  REQUIRE(kernels::export_arrow_device(std::move(col), want->dtype, *stream, &out).ok());
  CHECK(out.device_type == ARROW_DEVICE_CUDA);
  CHECK(out.device_id == 0);
  CHECK(out.array.length == 5000);
  CHECK(out.array.null_count == want->null_count);
  REQUIRE(out.array.n_buffers == 2);
  REQUIRE(out.sync_event != nullptr);
  REQUIRE(cudaEventSynchronize(*static_cast<cudaEvent_t*>(out.sync_event)) == cudaSuccess);
  std::vector<uint8_t> values(5000 * 4), validity((5000 + 7) / 8);
  REQUIRE(cudaMemcpy(values.data(), out.array.buffers[1], values.size(), cudaMemcpyDeviceToHost) ==
          cudaSuccess);
  REQUIRE(cudaMemcpy(validity.data(), out.array.buffers[0], validity.size(),
                     cudaMemcpyDeviceToHost) == cudaSuccess);
  CHECK(compare_rows(values, format::Buffer::copy_of(validity), *want) == "");
  out.array.release(&out.array);
  CHECK(out.array.release == nullptr);
}

TEST_CASE("a decoded column exports as a DLPack tensor", "[kernels][gpu][export]") {
  auto stream = kernels::Stream::create();
  REQUIRE(stream.ok());
  ColumnPtr want;
  auto col = decoded(3000, /*nulls=*/false, *stream, want);
  auto t = kernels::export_dlpack(std::move(col), want->dtype, *stream);
  REQUIRE(t.ok());
  DLManagedTensor* m = *t;
  CHECK(m->dl_tensor.device.device_type == kDLCUDA);
  CHECK(m->dl_tensor.ndim == 1);
  CHECK(m->dl_tensor.shape[0] == 3000);
  CHECK(m->dl_tensor.dtype.code == kDLInt);
  CHECK(m->dl_tensor.dtype.bits == 32);
  std::vector<uint8_t> values(3000 * 4);
  REQUIRE(cudaMemcpy(values.data(), m->dl_tensor.data, values.size(), cudaMemcpyDeviceToHost) ==
          cudaSuccess);
  CHECK(compare_rows(values, format::Buffer(), *want) == "");
  m->deleter(m);
}

namespace {

// A dict column whose row 1 holds code 3 of 3 values, decoded on @p stream.
kernels::DeviceColumn corrupt_dict(kernels::Stream& stream, kernels::FusedPlan& plan) {
  auto n = three_value_dict(3);
  format::DecodeContext ctx;
  auto p = kernels::build_fused_plan(n, DType::make_primitive(PType::i64, false), 3, ctx);
  REQUIRE(p.ok());
  plan = std::move(*p);
  auto col = kernels::decode_on_device(plan, stream);
  REQUIRE(col.ok());
  return std::move(*col);
}

}  // namespace

TEST_CASE("the exports refuse a column whose dict code was out of range",
          "[kernels][gpu][export]") {
  auto stream = kernels::Stream::create();
  REQUIRE(stream.ok());
  const auto i64 = DType::make_primitive(PType::i64, false);
  kernels::FusedPlan plan;
  ArrowDeviceArray out{};
  auto arrow = kernels::export_arrow_device(corrupt_dict(*stream, plan), i64, *stream, &out);
  REQUIRE_FALSE(arrow.ok());
  CHECK(arrow.error().code() == Errc::corrupt);
  CHECK(out.array.release == nullptr);
  auto dlpack = kernels::export_dlpack(corrupt_dict(*stream, plan), i64, *stream);
  REQUIRE_FALSE(dlpack.ok());
  CHECK(dlpack.error().code() == Errc::corrupt);
}

TEST_CASE("a DLPack tensor outlives its decode session and is freed after its consumer's stream",
          "[kernels][gpu][export]") {
  auto consumer = kernels::Stream::create();
  REQUIRE(consumer.ok());
  const auto cases = fused_cases({300'001}, /*every_width=*/false);
  const FusedCase* c = nullptr;
  for (const auto& k : cases) {
    if (k.name.rfind("primitive i16", 0) == 0) c = &k;
  }
  REQUIRE(c != nullptr);
  format::DecodeContext ctx;
  auto plan = kernels::build_fused_plan(c->node, c->dtype, c->len, ctx);
  REQUIRE(plan.ok());
  DLManagedTensor* m = nullptr;
  {
    auto session = kernels::DecodeSession::create({2, 1 << 20});
    REQUIRE(session.ok());
    auto col = session->decode(*plan);
    REQUIRE(col.ok());
    auto stream = session->stream_of(col->queued_on);
    REQUIRE(stream.ok());
    auto t = kernels::export_dlpack(std::move(*col), c->dtype, **stream, consumer->handle());
    REQUIRE(t.ok());
    m = *t;
  }  // the session and its streams are gone; the tensor's buffers keep their stream
  std::vector<uint8_t> got(plan->output_bytes());
  REQUIRE(cudaMemcpyAsync(got.data(), m->dl_tensor.data, got.size(), cudaMemcpyDeviceToHost,
                          consumer->handle()) == cudaSuccess);
  m->deleter(m);  // queued behind the consumer's copy, which still reads the memory
  REQUIRE(consumer->synchronize().ok());
  auto expected = decode(c->node, c->dtype, c->len);
  REQUIRE(expected.ok());
  CHECK(compare_rows(got, format::Buffer(), **expected) == "");
  CHECK(cudaGetLastError() == cudaSuccess);
}
