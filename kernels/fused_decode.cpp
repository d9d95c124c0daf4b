// SPDX-License-Identifier: Apache-2.0
// Staging: packed data, patch positions and values, run ends and values, each dictionary and the
// error word are laid out in one arena at 256-byte aligned offsets, written once into pinned memory and copied
// with a single cudaMemcpyAsync; the kernel's pointers are offsets into the device copy.
#include "kernels/fused_decode.hpp"

#include <cuda_runtime.h>

#include <cstring>
#include <utility>
#include <vector>

#include "config/defaults.hpp"
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

namespace {

// Stages @p plan's inputs in pinned memory (@p shared when it is large enough, else a buffer
// the column owns), queues one H2D copy and the launch on @p stream, and records @p copied (if
// any) right after the copy: the event that gates the next reuse of @p shared.
Result<DeviceColumn> stage_and_launch(const FusedPlan& plan, Stream& stream, PinnedBuffer* shared,
                                      cudaEvent_t copied) {
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
      {plan.validity.data(), plan.validity.size()},
  };
  for (const auto& d : plan.dict_values) parts.push_back({d.data(), d.size()});
  size_t arena = 0;
  for (auto& part : parts) {
    part.offset = arena;
    arena += aligned(part.bytes);
  }
  const size_t error_offset = arena;
  arena += aligned(sizeof(uint32_t));

  uint8_t* staging = nullptr;
  if (shared != nullptr && shared->size() >= arena) {
    staging = shared->data();
  } else {
    OC_ASSIGN_OR_RETURN(col.staging, PinnedBuffer::allocate(arena));
    staging = col.staging.data();
  }
  for (const auto& part : parts) {
    if (part.bytes > 0) std::memcpy(staging + part.offset, part.host, part.bytes);
  }
  std::memset(staging + error_offset, 0, sizeof(uint32_t));
  OC_ASSIGN_OR_RETURN(col.inputs, DeviceBuffer::allocate(arena, stream));
  OC_ASSIGN_OR_RETURN(col.values, DeviceBuffer::allocate(plan.output_bytes(), stream));
  OC_TRY(cuda_check(cudaMemcpyAsync(col.inputs.data(), staging, arena, cudaMemcpyHostToDevice, stream.handle()),
                    "copy inputs to device"));
  if (copied != nullptr) OC_TRY(cuda_check(cudaEventRecord(copied, stream.handle()), "cudaEventRecord"));

  uint8_t* base = col.inputs.as<uint8_t>();
  FusedParams p = plan.params;
  p.packed = base + parts[0].offset;
  p.patch_positions = reinterpret_cast<const uint64_t*>(base + parts[1].offset);
  p.patch_values = reinterpret_cast<const uint64_t*>(base + parts[2].offset);
  p.run_ends = reinterpret_cast<const uint64_t*>(base + parts[3].offset);
  p.run_values = reinterpret_cast<const uint64_t*>(base + parts[4].offset);
  p.out_patch_rows = reinterpret_cast<const uint64_t*>(base + parts[5].offset);
  p.out_patch_values = reinterpret_cast<const uint64_t*>(base + parts[6].offset);
  p.validity = plan.validity.empty() ? nullptr : base + parts[7].offset;
  size_t dict = 8;
  for (uint32_t k = 0; k < p.op_count; ++k) {
    if (p.ops[k].kind == FusedOpKind::dict) p.ops[k].values = base + parts[dict++].offset;
  }
  p.out = col.values.data();
  col.error = reinterpret_cast<uint32_t*>(base + error_offset);
  p.error = col.error;
  col.params = p;
  if (!plan.validity.empty()) {  // the column keeps its bitmap after `inputs` is freed
    OC_ASSIGN_OR_RETURN(col.validity, DeviceBuffer::allocate(plan.validity.size(), stream));
    OC_TRY(cuda_check(cudaMemcpyAsync(col.validity.data(), p.validity, plan.validity.size(), cudaMemcpyDeviceToDevice,
                                      stream.handle()), "copy the validity"));
    col.null_count = plan.null_count;
  }
  auto launched = cuda_check(detail::launch_fused_decode(p, stream.handle()), "fused_decode_kernel");
  if (!launched.ok()) {
    (void)stream.synchronize();  // the queued copy still reads the staging memory
    return launched.error();
  }
  return col;
}

}  // namespace

Result<DeviceColumn> decode_on_device(const FusedPlan& plan, Stream& stream) {
  return stage_and_launch(plan, stream, nullptr, nullptr);
}

DecodeSession::Options DecodeSession::Options::defaults() {
  return {oc::defaults().gpu_streams, oc::defaults().gpu_staging_bytes};
}

Result<DecodeSession> DecodeSession::create(const Options& options) {
  OC_EXPECT(options.streams > 0, invalid, "a decode session needs at least one stream");
  DecodeSession session;
  for (uint32_t i = 0; i < options.streams; ++i) {
    Slot slot;
    OC_ASSIGN_OR_RETURN(slot.stream, Stream::create());
    OC_ASSIGN_OR_RETURN(slot.staging, PinnedBuffer::allocate(options.staging_bytes));
    cudaEvent_t e = nullptr;
    OC_TRY(cuda_check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate"));
    slot.copied = e;
    session.slots_.push_back(std::move(slot));
  }
  return session;
}

DecodeSession::Slot::Slot(Slot&& other) noexcept
    : stream(std::move(other.stream)), staging(std::move(other.staging)), copied(std::exchange(other.copied, nullptr)) {}

DecodeSession::Slot::~Slot() {
  if (copied != nullptr) (void)cudaEventDestroy(copied);
}

Result<DeviceColumn> DecodeSession::decode(const FusedPlan& plan) {
  Slot& slot = slots_[next_];
  next_ = (next_ + 1) % slots_.size();
  // The slot's staging buffer is free once its last copy ran; an event never recorded is complete.
  OC_TRY(cuda_check(cudaEventSynchronize(slot.copied), "wait for the staging buffer"));
  OC_ASSIGN_OR_RETURN(DeviceColumn col, stage_and_launch(plan, slot.stream, &slot.staging, slot.copied));
  col.queued_on = slot.stream.handle();
  return col;
}

Result<void> DecodeSession::finish(DeviceColumn& column) {
  for (auto& slot : slots_) {
    if (slot.stream.handle() == column.queued_on) return column.finish(slot.stream);
  }
  OC_EXPECT(column.rows == 0, invalid, "the column was not decoded by this session");
  return {};
}

Result<void> DecodeSession::synchronize() {
  for (auto& slot : slots_) OC_TRY(slot.stream.synchronize());
  return {};
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
