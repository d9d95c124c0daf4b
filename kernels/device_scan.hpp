// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief Scans whose batches land in GPU memory: `VortexFile::scan` with a `ChunkDecoder`
/// (format/layout_reader.hpp) that decodes on the device every flat chunk a fused plan covers
/// (kernels/fused_plan.hpp), decodes the rest on the CPU and copies it over, and gathers each
/// batch's window and kept rows on the device (kernels/gather.hpp).
///
/// Per output column of a batch:
///   flat chunk, fixed width, fusable   -> upload of the encoded inputs, fused decode of the
///                                         chunk, gather of the batch's rows (device);
///   anything else (strings, bools,      -> CPU decode (the scan's own decoders), CPU filter,
///   lists, dict layouts, the filter's      copy of its buffers to the device
///   own columns)
/// Batches are struct columns whose children have `device` = the GPU and buffers in its
/// memory; strings arrive as offsets (string views point into host memory). Every batch is
/// complete when `next()` returns it: the error words of its decodes are checked (a corrupt file
/// is an error, never zeros handed on).
///
/// `DeviceDecodes::host_reference` runs the same plans, gathers and placement on the host,
/// with the kernels' own host executors: the CPU tests check everything above the CUDA calls
/// against the plain scan with it.
///
/// The fused chunks of a split are decoded together: `decode_flat` plans a chunk and returns its
/// column with buffers allocated (their size and nulls are known from the plan), and
/// `finish_split`, which the scan calls before it hands the batch out, decodes them all with one
/// upload and one launch, gathers, and waits once.
///
/// @note The CUDA path is untested on GPU hardware so far (onecopy-tests-gpu compares it with
/// the CPU scan).
#pragma once

#include <atomic>
#include <memory>
#include <mutex>

#include "config/error.hpp"
#include "format/layout_reader.hpp"
#include "format/reader.hpp"
#include "format/shard.hpp"
#include "kernels/device_memory.hpp"
#include "kernels/fused_plan.hpp"
#include "kernels/gather_stages.hpp"

namespace oc::kernels {

/// Where a device scan's decodes run.
enum class DeviceDecodes : uint8_t {
  cuda,            ///< on the GPU; batches in device memory
  host_reference,  ///< the same steps on the host, with the kernels' host executors
};

/// What a device scan did, summed over its batches.
struct DeviceScanStats {
  uint64_t fused_chunks = 0;     ///< flat chunks decoded by a fused plan
  uint64_t cpu_chunks = 0;       ///< flat chunks decoded on the CPU (no fused plan covers them)
  uint64_t placed_columns = 0;   ///< columns decoded on the CPU and copied over
  uint64_t launches = 0;         ///< batched decodes: one per split with fused chunks
  uint64_t bytes_uploaded = 0;   ///< encoded inputs and CPU-decoded buffers sent to the device
  uint64_t bytes_delivered = 0;  ///< values and bitmaps of the batches' columns
  uint64_t decode_ns = 0;        ///< wall time finish_split spent on the batched decodes and waits
};

/// A `ChunkDecoder` onto one GPU (or the host reference).
class DeviceChunkDecoder final : public format::ChunkDecoder {
 public:
  /// @return a decoder onto CUDA device @p device; `Errc::cuda` when there is none (the message
  /// says why: no driver, no device, built without CUDA).
  [[nodiscard]] static Result<std::shared_ptr<DeviceChunkDecoder>> create(int device,
                                                                          DeviceDecodes where);
  ~DeviceChunkDecoder() override;

  [[nodiscard]] Result<format::ColumnPtr> decode_flat(const format::ArrayView& tree,
                                                      const format::DTypePtr& dtype,
                                                      uint64_t chunk_rows, format::RowWindow rows,
                                                      const std::vector<uint8_t>* keep,
                                                      format::StringLayout strings) override;
  [[nodiscard]] Result<format::ColumnPtr> place(format::ColumnPtr decoded,
                                                const std::vector<uint8_t>* keep) override;
  /// Decodes every fused chunk handed over since the last call with one upload and one launch
  /// (kernels::DecodeSession::decode_batch), gathers their rows and waits once.
  [[nodiscard]] Result<void> finish_split() override;

  [[nodiscard]] int device() const noexcept { return device_; }
  [[nodiscard]] DeviceDecodes where() const noexcept { return where_; }
  [[nodiscard]] DeviceScanStats stats() const;

 private:
  struct Cuda;  // the decode session (device_scan.cpp)
  // A fused chunk whose column exists, decoded and gathered at the next finish_split.
  struct Pending {
    std::shared_ptr<kernels::FusedPlan> plan;
    std::vector<uint32_t> selection;  // the kept rows, relative to the window
    kernels::GatherParams gather;     // outputs set; the source is set once decoded
    kernels::DeviceBuffer selected;   // cuda: `selection` on the device
  };
  DeviceChunkDecoder(int device, DeviceDecodes where);
  // @p col (host) copied to the device through the session's pinned staging, children too;
  // finish_split waits for the copies. Under `mu_`.
  Result<format::ColumnPtr> upload(const format::ColumnPtr& col);
  int device_;
  DeviceDecodes where_;
  std::mutex mu_;  // the session and `pending_`: the scan's column threads take turns
  std::unique_ptr<Cuda> cuda_;
  std::vector<Pending> pending_;
  bool uploads_waiting_ = false;  // cuda: placed columns' copies not waited for yet
  std::atomic<uint64_t> fused_chunks_{0}, cpu_chunks_{0}, placed_columns_{0}, launches_{0},
      bytes_uploaded_{0}, bytes_delivered_{0}, decode_ns_{0};
};

}  // namespace oc::kernels
