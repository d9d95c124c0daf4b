// SPDX-License-Identifier: Apache-2.0
// Staging: packed data, patch positions and values, run ends and values, each dictionary and the
// error word are laid out in one arena at 256-byte aligned offsets, written once into pinned memory and copied
// with a single cudaMemcpyAsync; the kernel's pointers are offsets into the device copy.
#include "kernels/fused_decode.hpp"

#include <cuda_runtime.h>

#include <cstring>
#include <vector>

#include "kernels/cuda_check.hpp"
#include "kernels/fused_decode.cuh"

namespace oc::kernels {
namespace {

constexpr size_t kArenaAlign = 256;  // cudaMalloc's own alignment; keeps every part aligned

size_t aligned(size_t n) { return (n + kArenaAlign - 1) / kArenaAlign * kArenaAlign; }

struct Part {
  const void* host;
  size_t bytes;
  size_t offset = 0;
};

}  // namespace

Result<void> DeviceColumn::finish(Stream& stream) {
  uint32_t host_error = 0;
  if (error != nullptr) {
    OC_TRY(cuda_check(cudaMemcpyAsync(&host_error, error, sizeof(host_error), cudaMemcpyDeviceToHost,
                                      stream.handle()), "copy the error word"));
  }
  OC_TRY(stream.synchronize());
  staging = PinnedBuffer();
  inputs = DeviceBuffer();
  error = nullptr;
  OC_EXPECT((host_error & kFusedErrorDictCode) == 0, corrupt, "dict code out of range (device decode)");
  return {};
}

Result<DeviceColumn> decode_on_device(const FusedPlan& plan, Stream& stream) {
  DeviceColumn col;
  col.rows = plan.params.len;
  col.value_bytes = plan.params.out_bytes();
  if (col.rows == 0) return col;

  std::vector<Part> parts = {
      {plan.packed.data(), plan.packed.size()},
      {plan.patch_positions.data(), plan.patch_positions.size() * sizeof(uint64_t)},
      {plan.patch_values.data(), plan.patch_values.size() * sizeof(uint64_t)},
      {plan.run_ends.data(), plan.run_ends.size() * sizeof(uint64_t)},
      {plan.run_values.data(), plan.run_values.size() * sizeof(uint64_t)},
      {plan.out_patch_rows.data(), plan.out_patch_rows.size() * sizeof(uint64_t)},
      {plan.out_patch_values.data(), plan.out_patch_values.size() * sizeof(uint64_t)},
  };
  for (const auto& d : plan.dict_values) parts.push_back({d.data(), d.size()});
  size_t arena = 0;
  for (auto& part : parts) {
    part.offset = arena;
    arena += aligned(part.bytes);
  }
  const size_t error_offset = arena;
  arena += aligned(sizeof(uint32_t));

  OC_ASSIGN_OR_RETURN(col.staging, PinnedBuffer::allocate(arena));
  for (const auto& part : parts) {
    if (part.bytes > 0) std::memcpy(col.staging.data() + part.offset, part.host, part.bytes);
  }
  std::memset(col.staging.data() + error_offset, 0, sizeof(uint32_t));
  OC_ASSIGN_OR_RETURN(col.inputs, DeviceBuffer::allocate(arena, stream));
  OC_ASSIGN_OR_RETURN(col.values, DeviceBuffer::allocate(plan.output_bytes(), stream));
  OC_TRY(cuda_check(cudaMemcpyAsync(col.inputs.data(), col.staging.data(), arena,
                                    cudaMemcpyHostToDevice, stream.handle()), "copy inputs to device"));

  uint8_t* base = col.inputs.as<uint8_t>();
  FusedParams p = plan.params;
  p.packed = base + parts[0].offset;
  p.patch_positions = reinterpret_cast<const uint64_t*>(base + parts[1].offset);
  p.patch_values = reinterpret_cast<const uint64_t*>(base + parts[2].offset);
  p.run_ends = reinterpret_cast<const uint64_t*>(base + parts[3].offset);
  p.run_values = reinterpret_cast<const uint64_t*>(base + parts[4].offset);
  p.out_patch_rows = reinterpret_cast<const uint64_t*>(base + parts[5].offset);
  p.out_patch_values = reinterpret_cast<const uint64_t*>(base + parts[6].offset);
  size_t dict = 7;
  for (uint32_t k = 0; k < p.op_count; ++k) {
    if (p.ops[k].kind == FusedOpKind::dict) p.ops[k].values = base + parts[dict++].offset;
  }
  p.out = col.values.data();
  col.error = reinterpret_cast<uint32_t*>(base + error_offset);
  p.error = col.error;
  col.params = p;
  auto launched = cuda_check(detail::launch_fused_decode(p, stream.handle()), "fused_decode_kernel");
  if (!launched.ok()) {
    (void)stream.synchronize();  // the queued copy still reads `staging`, freed on return
    return launched.error();
  }
  return col;
}

Result<format::Buffer> decode_on_device_to_host(const FusedPlan& plan) {
  OC_ASSIGN_OR_RETURN(Stream stream, Stream::create());
  OC_ASSIGN_OR_RETURN(DeviceColumn col, decode_on_device(plan, stream));
  format::Buffer out = format::Buffer::allocate_for_overwrite(plan.output_bytes());
  if (out.size() > 0) {
    OC_TRY(cuda_check(cudaMemcpyAsync(out.mutable_data(), col.values.data(), out.size(),
                                      cudaMemcpyDeviceToHost, stream.handle()), "copy values to host"));
  }
  OC_TRY(col.finish(stream));
  return out;
}

}  // namespace oc::kernels
