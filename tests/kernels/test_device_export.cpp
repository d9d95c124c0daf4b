// SPDX-License-Identifier: Apache-2.0
// Arrow C Device and DLPack exports of a column decoded on the GPU (onecopy-tests-gpu).
#include <catch2/catch.hpp>

#include <cuda_runtime.h>

#include "kernels/device_export.hpp"
#include "tests/kernels/fused_cases.hpp"

using namespace oc;
using namespace oc::test;

namespace {

// A FoR > bitpacked i32 column of @p len rows, decoded on @p stream; its CPU decode in @p want.
kernels::DeviceColumn decoded(uint64_t len, bool nulls, kernels::Stream& stream, ColumnPtr& want) {
  std::mt19937_64 rng(len);
  ArrayView packed = bitpacked_with_patches<int32_t>(fitting_values<int32_t>(len, 10, rng), 10, 0, true, rng);
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
  REQUIRE(cudaMemcpy(values.data(), out.array.buffers[1], values.size(), cudaMemcpyDeviceToHost) == cudaSuccess);
  REQUIRE(cudaMemcpy(validity.data(), out.array.buffers[0], validity.size(), cudaMemcpyDeviceToHost) == cudaSuccess);
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
  REQUIRE(cudaMemcpy(values.data(), m->dl_tensor.data, values.size(), cudaMemcpyDeviceToHost) == cudaSuccess);
  CHECK(compare_rows(values, format::Buffer(), *want) == "");
  m->deleter(m);
}
