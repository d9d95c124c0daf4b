// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief Executes a `FusedPlan` (kernels/fused_plan.hpp) on device 0 in one kernel launch.
///
/// The decode stages the plan's inputs (packed data, patches, dictionaries) through one pinned
/// buffer, copies them to one device allocation with a single asynchronous copy, launches the
/// fused kernel (kernels/fused_decode.cu) and leaves the values in device memory. Nothing waits
/// until `DeviceColumn::finish`, which synchronizes once and reports corrupt dict codes found on
/// the device: no device-to-host round trip per stage or per chunk.
///
/// @note Untested on GPU hardware so far: onecopy-tests-gpu compares it with `run_plan_on_host`
/// and the CPU decoders, and SKIPs (exit 77) on machines without a CUDA device.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "config/error.hpp"
#include "format/buffer.hpp"
#include "kernels/device_memory.hpp"
#include "kernels/fused_block.hpp"
#include "kernels/fused_plan.hpp"

struct CUevent_st;  // cudaEvent_t is CUevent_st*

namespace oc::kernels {

/// A column decoding (or decoded) on the device, with the inputs the launch still reads.
struct DeviceColumn {
  DeviceBuffer values;  ///< `rows` values of `value_bytes` each, row 0 first
  uint64_t rows = 0;
  unsigned value_bytes = 0;
  DeviceBuffer validity;  ///< Arrow bitmap (bit i = row i); empty when every row is valid
  int64_t null_count = 0;
  DeviceBuffer
      inputs;  ///< staged inputs and the error word; freed after the kernel, in stream order
  PinnedBuffer staging;       ///< host side of the input copy; must live until the copy completed
  uint32_t* error = nullptr;  ///< device address of the error word, inside `inputs`
  /// The launch's parameters, bound to `inputs` and `values`: a benchmark re-launches with them
  /// (detail::launch_fused_decode) while the column is unfinished.
  FusedParams params;
  CUstream_st* queued_on = nullptr;  ///< the session stream it runs on (`DecodeSession::decode`)
  bool finished = false;             ///< `finish` has checked the error word

  /// Waits for the decode on @p stream (the one it was queued on) and checks the error word;
  /// once finished, returns at once.
  /// @return `Errc::corrupt` when a dict code was out of range; `Errc::cuda` on a CUDA failure.
  [[nodiscard]] Result<void> finish(Stream& stream);
};

/// The decodes of many plans, queued with one upload and one launch
/// (`DecodeSession::decode_batch`): small chunks share a launch instead of leaving the GPU idle.
struct DeviceBatch {
  std::vector<DeviceColumn>
      columns;           ///< one per plan, in order; their `error` words lie in `inputs`
  DeviceBuffer inputs;   ///< every plan's staged inputs, the bound parameters and the tile starts
  PinnedBuffer staging;  ///< host side of the copy when the session's staging was too small
  FusedBatchParams params;  ///< the launch's parameters, bound to `inputs`
  CUstream_st* queued_on = nullptr;
  bool finished = false;

  /// Waits for the batch on @p stream and checks every plan's error word (one synchronization).
  /// @return `Errc::corrupt` naming the first plan with a dict code out of range.
  [[nodiscard]] Result<void> finish(Stream& stream);
};

/// Queues the decode of @p plan on @p stream and returns at once.
/// @return the column; call `finish` before reading `values` from the host or freeing the plan.
[[nodiscard]] Result<DeviceColumn> decode_on_device(const FusedPlan& plan, Stream& stream);

/// A pool of streams for many decodes in flight: each stream owns a pinned staging buffer,
/// and a CUDA event recorded after each upload gates that buffer's reuse, so the host waits only
/// when it comes back to a stream whose previous upload has not finished. Decodes go to the
/// streams round robin; device memory comes from the stream-ordered pool (device_memory.hpp).
/// @note Not thread-safe: one thread submits. Untested on GPU hardware so far.
class DecodeSession {
 public:
  struct Options {
    uint32_t streams = 0;        ///< streams (and staging buffers) in the pool
    uint64_t staging_bytes = 0;  ///< pinned bytes per stream; a larger decode pins its own
    /// The `gpu_streams` and `gpu_staging_bytes` knobs (config/defaults.hpp).
    [[nodiscard]] static Options defaults();
  };
  /// @return a session on device 0; `Errc::cuda` without a device.
  [[nodiscard]] static Result<DecodeSession> create(const Options& options = Options::defaults());

  /// Queues the decode of @p plan on the next stream; returns once its inputs are staged.
  [[nodiscard]] Result<DeviceColumn> decode(const FusedPlan& plan);
  /// Queues the decode of every plan of @p plans on the next stream with one upload and one
  /// launch; returns once the inputs are staged.
  [[nodiscard]] Result<DeviceBatch> decode_batch(std::span<const FusedPlan* const> plans);
  /// Queues copies of @p parts (host memory) into new device buffers on the next stream: one
  /// memcpy of them all into its pinned staging buffer (or a pinned buffer of their own when
  /// they do not fit), then one asynchronous copy each. Returns once the bytes are staged: the
  /// host memory may change or go at once. The device buffers are complete when the stream
  /// is, e.g. after `synchronize`.
  [[nodiscard]] Result<std::vector<DeviceBuffer>> upload(
      std::span<const std::span<const uint8_t>> parts);
  /// Waits for @p column (decoded by this session) and checks its error word.
  [[nodiscard]] Result<void> finish(DeviceColumn& column);
  /// Waits for @p batch (decoded by this session) and checks its error words.
  [[nodiscard]] Result<void> finish(DeviceBatch& batch);
  /// The session's stream @p i (modulo their number), for work that needs no staging buffer.
  [[nodiscard]] Stream& stream_at(size_t i) noexcept { return slots_[i % slots_.size()].stream; }
  /// @return the session's stream that @p queued_on names; `Errc::invalid` for another.
  [[nodiscard]] Result<Stream*> stream_of(CUstream_st* queued_on);
  /// Waits for every stream.
  [[nodiscard]] Result<void> synchronize();

 private:
  struct Slot {
    Slot() = default;
    Slot(Slot&& other) noexcept;
    Slot& operator=(Slot&&) = delete;
    ~Slot();
    Stream stream = Stream::null();
    PinnedBuffer staging;
    PinnedBuffer overflow;         ///< an upload too large for `staging`, until the slot's next use
    CUevent_st* copied = nullptr;  ///< recorded after the last upload from `staging` or `overflow`
  };
  // The next slot round robin, once its staging buffer's last upload has run.
  Result<Slot*> next_slot();
  std::vector<Slot> slots_;
  size_t next_ = 0;
};

/// Decodes @p plan on the device and copies the values back: the tests' entry point.
/// @return `plan.output_bytes()` bytes, equal to `run_plan_on_host(plan)`.
[[nodiscard]] Result<format::Buffer> decode_on_device_to_host(const FusedPlan& plan);

}  // namespace oc::kernels
