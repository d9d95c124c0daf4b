// SPDX-License-Identifier: Apache-2.0
// Staging: packed data, patch positions and values, run ends and values, the bitmaps, each
// dictionary and the error word are laid out in one arena at 256-byte aligned offsets, written
// once into pinned memory and copied with a single cudaMemcpyAsync; the kernel's pointers are
// offsets into the device copy. A batch lays out every plan's parts, then the plans' bound
// parameters and tile starts, in one arena: one copy and one launch for the whole batch.
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

// Where one plan's inputs lie in an arena: packed data, patches, runs, out patches, the bitmap
// the ops read, the output bitmap, each dictionary, then its error word.
struct PlanLayout {
  std::vector<Part> parts;
  size_t error_offset = 0;
};

enum PartIndex : size_t {
  kPacked,
  kPatchPositions,
  kPatchValues,
  kRunEnds,
  kRunValues,
  kOutPatchRows,
  kOutPatchValues,
  kSourceValidity,
  kValidity,
  kFirstDict
};

// Appends @p plan's parts to an arena of @p arena bytes so far.
PlanLayout lay_out(const FusedPlan& plan, size_t& arena) {
  PlanLayout l;
  l.parts = {
      {plan.packed.data(), plan.packed.size()},
      {plan.patch_positions.data(), plan.patch_positions.size() * sizeof(uint64_t)},
      {plan.patch_values.data(), plan.patch_values.size() * sizeof(uint64_t)},
      {plan.run_ends.data(), plan.run_ends.size() * sizeof(uint64_t)},
      {plan.run_values.data(), plan.run_values.size() * sizeof(uint64_t)},
      {plan.out_patch_rows.data(), plan.out_patch_rows.size() * sizeof(uint64_t)},
      {plan.out_patch_values.data(), plan.out_patch_values.size() * sizeof(uint64_t)},
      {plan.source_validity.data(), plan.source_validity.size()},
      {plan.validity.data(), plan.validity.size()},
  };
  for (const auto& d : plan.dict_values) l.parts.push_back({d.data(), d.size()});
  for (auto& part : l.parts) {
    part.offset = arena;
    arena += aligned(part.bytes);
  }
  l.error_offset = arena;
  arena += aligned(sizeof(uint32_t));
  return l;
}

// Writes @p l's parts and a cleared error word into @p staging.
void stage(const PlanLayout& l, uint8_t* staging) {
  for (const auto& part : l.parts) {
    if (part.bytes > 0) std::memcpy(staging + part.offset, part.host, part.bytes);
  }
  std::memset(staging + l.error_offset, 0, sizeof(uint32_t));
}

// @p plan's parameters pointing into the device arena at @p base and at @p out.
FusedParams bind_device(const FusedPlan& plan, const PlanLayout& l, uint8_t* base, void* out) {
  auto at = [&](size_t part) { return base + l.parts[part].offset; };
  FusedParams p = plan.params;
  p.packed = at(kPacked);
  p.patch_positions = reinterpret_cast<const uint64_t*>(at(kPatchPositions));
  p.patch_values = reinterpret_cast<const uint64_t*>(at(kPatchValues));
  p.run_ends = reinterpret_cast<const uint64_t*>(at(kRunEnds));
  p.run_values = reinterpret_cast<const uint64_t*>(at(kRunValues));
  p.out_patch_rows = reinterpret_cast<const uint64_t*>(at(kOutPatchRows));
  p.out_patch_values = reinterpret_cast<const uint64_t*>(at(kOutPatchValues));
  p.validity = plan.source_validity.empty() ? nullptr : at(kSourceValidity);
  size_t dict = kFirstDict;
  for (uint32_t k = 0; k < p.op_count; ++k) {
    if (p.ops[k].kind == FusedOpKind::dict) p.ops[k].values = at(dict++);
  }
  p.out = out;
  p.error = reinterpret_cast<uint32_t*>(base + l.error_offset);
  return p;
}

// The column of @p plan before its launch: output memory, and its bitmap copied out of the
// arena (the column keeps it after the arena is freed).
Result<DeviceColumn> new_column(const FusedPlan& plan, const PlanLayout& l, uint8_t* base,
                                Stream& stream) {
  DeviceColumn col;
  col.rows = plan.params.len;
  col.value_bytes = plan.params.out_bytes();
  OC_ASSIGN_OR_RETURN(col.values, DeviceBuffer::allocate(plan.output_bytes(), stream));
  col.params = bind_device(plan, l, base, col.values.data());
  col.error = col.params.error;
  if (!plan.validity.empty()) {
    OC_ASSIGN_OR_RETURN(col.validity, DeviceBuffer::allocate(plan.validity.size(), stream));
    col.null_count = plan.null_count;
  }
  return col;
}

// Pinned memory for @p arena bytes: @p shared when it is large enough, else @p own, allocated.
Result<uint8_t*> staging_for(size_t arena, PinnedBuffer* shared, PinnedBuffer& own) {
  if (shared != nullptr && shared->size() >= arena) return shared->data();
  OC_ASSIGN_OR_RETURN(own, PinnedBuffer::allocate(arena));
  return own.data();
}

// Queues the copy of @p staging to @p device and records @p copied (if any) right after it:
// the event that gates the next reuse of a shared staging buffer.
Result<void> upload(void* device, const uint8_t* staging, size_t bytes, Stream& stream,
                    cudaEvent_t copied) {
  OC_TRY(
      cuda_check(cudaMemcpyAsync(device, staging, bytes, cudaMemcpyHostToDevice, stream.handle()),
                 "copy inputs to device"));
  if (copied != nullptr)
    OC_TRY(cuda_check(cudaEventRecord(copied, stream.handle()), "cudaEventRecord"));
  return {};
}

// Copies @p col's output bitmap out of the arena, after the upload, in stream order.
Result<void> keep_validity(DeviceColumn& col, const PlanLayout& l, uint8_t* base, Stream& stream) {
  if (col.validity.size() == 0) return {};
  return cuda_check(cudaMemcpyAsync(col.validity.data(), base + l.parts[kValidity].offset,
                                    col.validity.size(), cudaMemcpyDeviceToDevice, stream.handle()),
                    "copy the validity");
}

// A failed launch leaves the queued copy reading the staging memory: wait for it.
Result<void> launched(cudaError_t e, const char* what, Stream& stream) {
  auto r = cuda_check(e, what);
  if (!r.ok()) (void)stream.synchronize();
  return r;
}

// Stages @p plan's inputs in pinned memory (@p shared or a buffer the column owns), queues one
// H2D copy and the launch on @p stream.
Result<DeviceColumn> stage_and_launch(const FusedPlan& plan, Stream& stream, PinnedBuffer* shared,
                                      cudaEvent_t copied) {
  if (plan.params.len == 0) {
    DeviceColumn col;
    col.value_bytes = plan.params.out_bytes();
    col.finished = true;
    return col;
  }
  size_t arena = 0;
  const PlanLayout l = lay_out(plan, arena);
  PinnedBuffer own;
  OC_ASSIGN_OR_RETURN(uint8_t * staging, staging_for(arena, shared, own));
  stage(l, staging);
  OC_ASSIGN_OR_RETURN(DeviceBuffer inputs, DeviceBuffer::allocate(arena, stream));
  OC_ASSIGN_OR_RETURN(DeviceColumn col, new_column(plan, l, inputs.as<uint8_t>(), stream));
  col.inputs = std::move(inputs);
  col.staging = std::move(own);
  OC_TRY(upload(col.inputs.data(), staging, arena, stream, copied));
  OC_TRY(keep_validity(col, l, col.inputs.as<uint8_t>(), stream));
  OC_TRY(launched(detail::launch_fused_decode(col.params, stream.handle()), "fused_decode_kernel",
                  stream));
  return col;
}

// One upload and one launch for every plan of @p plans: each plan's parts, then the bound
// parameters (FusedParams[count], 8-byte aligned) and the tile starts (u64[count + 1]).
Result<DeviceBatch> stage_and_launch_batch(std::span<const FusedPlan* const> plans, Stream& stream,
                                           PinnedBuffer* shared, cudaEvent_t copied) {
  DeviceBatch batch;
  size_t arena = 0;
  std::vector<PlanLayout> layouts;
  layouts.reserve(plans.size());
  for (const FusedPlan* plan : plans) layouts.push_back(lay_out(*plan, arena));
  const size_t params_offset = arena;
  arena += aligned(plans.size() * sizeof(FusedParams));
  const size_t starts_offset = arena;
  arena += aligned((plans.size() + 1) * sizeof(uint64_t));

  OC_ASSIGN_OR_RETURN(uint8_t * staging, staging_for(arena, shared, batch.staging));
  OC_ASSIGN_OR_RETURN(batch.inputs, DeviceBuffer::allocate(arena, stream));
  uint8_t* base = batch.inputs.as<uint8_t>();
  auto* params = reinterpret_cast<FusedParams*>(staging + params_offset);
  auto* starts = reinterpret_cast<uint64_t*>(staging + starts_offset);
  starts[0] = 0;
  for (size_t i = 0; i < plans.size(); ++i) {
    stage(layouts[i], staging);
    OC_ASSIGN_OR_RETURN(DeviceColumn col, new_column(*plans[i], layouts[i], base, stream));
    params[i] = col.params;
    starts[i + 1] = starts[i] + (col.rows == 0 ? 0 : col.params.tiles());
    batch.columns.push_back(std::move(col));
  }
  batch.params = {reinterpret_cast<const FusedParams*>(base + params_offset),
                  reinterpret_cast<const uint64_t*>(base + starts_offset),
                  static_cast<uint32_t>(plans.size()), starts[plans.size()]};
  OC_TRY(upload(base, staging, arena, stream, copied));
  for (size_t i = 0; i < plans.size(); ++i)
    OC_TRY(keep_validity(batch.columns[i], layouts[i], base, stream));
  OC_TRY(launched(detail::launch_fused_batch(batch.params, stream.handle()), "fused_batch_kernel",
                  stream));
  batch.queued_on = stream.handle();
  return batch;
}

// Copies the error words at @p words (device) to the host and waits for @p stream.
Result<std::vector<uint32_t>> read_error_words(const std::vector<uint32_t*>& words,
                                               Stream& stream) {
  std::vector<uint32_t> host(words.size(), 0);
  for (size_t i = 0; i < words.size(); ++i) {
    if (words[i] == nullptr) continue;
    OC_TRY(cuda_check(cudaMemcpyAsync(&host[i], words[i], sizeof(uint32_t), cudaMemcpyDeviceToHost,
                                      stream.handle()),
                      "copy the error word"));
  }
  OC_TRY(stream.synchronize());
  return host;
}

}  // namespace

Result<void> DeviceColumn::finish(Stream& stream) {
  if (finished) return {};
  OC_ASSIGN_OR_RETURN(auto words, read_error_words({error}, stream));
  staging = PinnedBuffer();
  inputs = DeviceBuffer();
  error = nullptr;
  finished = true;
  OC_EXPECT((words[0] & kFusedErrorDictCode) == 0, corrupt,
            "dict code out of range (device decode)");
  return {};
}

Result<void> DeviceBatch::finish(Stream& stream) {
  if (finished) return {};
  std::vector<uint32_t*> words;
  for (const auto& col : columns) words.push_back(col.error);
  OC_ASSIGN_OR_RETURN(auto host, read_error_words(words, stream));
  staging = PinnedBuffer();
  inputs = DeviceBuffer();
  finished = true;
  for (size_t i = 0; i < columns.size(); ++i) {
    columns[i].error = nullptr;
    columns[i].finished = true;
    OC_EXPECT((host[i] & kFusedErrorDictCode) == 0, corrupt,
              "dict code out of range (device decode of plan {})", i);
  }
  return {};
}

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
    : stream(std::move(other.stream)),
      staging(std::move(other.staging)),
      overflow(std::move(other.overflow)),
      copied(std::exchange(other.copied, nullptr)) {}

DecodeSession::Slot::~Slot() {
  if (copied != nullptr) (void)cudaEventDestroy(copied);
}

Result<DecodeSession::Slot*> DecodeSession::next_slot() {
  Slot& slot = slots_[next_];
  next_ = (next_ + 1) % slots_.size();
  // The slot's staging buffer is free once its last copy ran; an event never recorded is complete.
  OC_TRY(cuda_check(cudaEventSynchronize(slot.copied), "wait for the staging buffer"));
  slot.overflow = PinnedBuffer();
  return &slot;
}

Result<std::vector<DeviceBuffer>> DecodeSession::upload(
    std::span<const std::span<const uint8_t>> parts) {
  OC_ASSIGN_OR_RETURN(Slot * slot, next_slot());
  size_t arena = 0;
  std::vector<size_t> offsets;
  for (const auto& part : parts) {
    offsets.push_back(arena);
    arena += aligned(part.size());
  }
  OC_ASSIGN_OR_RETURN(uint8_t * staging, staging_for(arena, &slot->staging, slot->overflow));
  std::vector<DeviceBuffer> out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (!parts[i].empty()) std::memcpy(staging + offsets[i], parts[i].data(), parts[i].size());
    OC_ASSIGN_OR_RETURN(DeviceBuffer d, DeviceBuffer::allocate(parts[i].size(), slot->stream));
    if (!parts[i].empty()) {
      OC_TRY(cuda_check(cudaMemcpyAsync(d.data(), staging + offsets[i], parts[i].size(),
                                        cudaMemcpyHostToDevice, slot->stream.handle()),
                        "upload to device"));
    }
    out.push_back(std::move(d));
  }
  OC_TRY(cuda_check(cudaEventRecord(slot->copied, slot->stream.handle()), "cudaEventRecord"));
  return out;
}

Result<DeviceColumn> DecodeSession::decode(const FusedPlan& plan) {
  OC_ASSIGN_OR_RETURN(Slot * slot, next_slot());
  OC_ASSIGN_OR_RETURN(DeviceColumn col,
                      stage_and_launch(plan, slot->stream, &slot->staging, slot->copied));
  col.queued_on = slot->stream.handle();
  return col;
}

Result<DeviceBatch> DecodeSession::decode_batch(std::span<const FusedPlan* const> plans) {
  OC_ASSIGN_OR_RETURN(Slot * slot, next_slot());
  return stage_and_launch_batch(plans, slot->stream, &slot->staging, slot->copied);
}

Result<Stream*> DecodeSession::stream_of(CUstream_st* queued_on) {
  for (auto& slot : slots_) {
    if (slot.stream.handle() == queued_on) return &slot.stream;
  }
  return OC_ERROR(Errc::invalid, "the decode was not queued by this session");
}

Result<void> DecodeSession::finish(DeviceColumn& column) {
  if (column.finished) return {};
  OC_ASSIGN_OR_RETURN(Stream * stream, stream_of(column.queued_on));
  return column.finish(*stream);
}

Result<void> DecodeSession::finish(DeviceBatch& batch) {
  if (batch.finished) return {};
  OC_ASSIGN_OR_RETURN(Stream * stream, stream_of(batch.queued_on));
  return batch.finish(*stream);
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
                                      cudaMemcpyDeviceToHost, stream.handle()),
                      "copy values to host"));
  }
  OC_TRY(col.finish(stream));
  return out;
}

}  // namespace oc::kernels
