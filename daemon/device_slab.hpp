// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief Client slabs in GPU memory: where onecopyd places a device scan's batches
/// (protocol.fbs `Scan.device`), as host slabs (daemon/slab.hpp) are for host batches.
///
/// A device slab is CUDA VMM memory exported as a POSIX descriptor, or, on a driver without
/// VMM, `cudaMalloc` memory with an IPC handle (kernels/shared_memory.hpp). It is sent once with
/// `DeviceSlabAdded` (the descriptor as SCM_RIGHTS, or the handle's bytes) and the client maps it
/// once for the connection. Like a host slab it belongs to one connection only, and a batch
/// takes one 64-byte-aligned range of it (daemon/ranges.hpp) from its `Batch` until `Release`.
/// The batch's buffers are copied into the range on the device (they were decoded into the
/// decode session's memory): one device-to-device copy per buffer.
///
/// @note Untested on GPU hardware so far; without a device the daemon refuses device scans.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>

#include "config/error.hpp"
#include "daemon/ranges.hpp"
#include "daemon/slab.hpp"
#include "kernels/shared_memory.hpp"

namespace oc::daemon {

class DeviceSlab {
 public:
  /// Allocates at least @p bytes on CUDA device @p device, shared the way @p kind says, and
  /// exports it (a descriptor, or an IPC handle) for `DeviceSlabAdded`.
  [[nodiscard]] static Result<std::shared_ptr<DeviceSlab>> create(uint64_t id, int device,
                                                                  uint64_t bytes,
                                                                  kernels::ShareKind kind);
  DeviceSlab(const DeviceSlab&) = delete;
  DeviceSlab& operator=(const DeviceSlab&) = delete;
  /// Closes the descriptor if it was never sent; the memory goes with the last mapping.
  ~DeviceSlab();

  [[nodiscard]] uint64_t id() const noexcept { return id_; }
  [[nodiscard]] int device() const noexcept { return device_; }
  [[nodiscard]] uint64_t bytes() const noexcept { return memory_.size(); }
  [[nodiscard]] uint8_t* base() const noexcept { return static_cast<uint8_t*>(memory_.data()); }
  [[nodiscard]] kernels::ShareKind kind() const noexcept { return memory_.kind(); }
  /// vmm: the descriptor exported when the slab was made, until `close_fd`; -1 for ipc.
  [[nodiscard]] int fd() const noexcept { return fd_; }
  /// Closes the descriptor once it has been sent: the daemon's mapping keeps the memory.
  void close_fd() noexcept;
  /// ipc: the handle's bytes (zeros for vmm).
  [[nodiscard]] const std::array<uint8_t, 64>& ipc_handle() const noexcept { return ipc_; }

  /// `RangeAllocator::allocate` of this slab's ranges, thread-safe.
  [[nodiscard]] std::optional<uint64_t> allocate(uint64_t bytes);
  /// `RangeAllocator::free`, thread-safe.
  bool free(uint64_t offset);
  [[nodiscard]] bool empty() const;

  bool sent = false;  ///< the client has it (`DeviceSlabAdded`)

 private:
  DeviceSlab(uint64_t id, int device, kernels::SharedDeviceMemory memory);
  mutable std::mutex mu_;
  kernels::SharedDeviceMemory memory_;
  RangeAllocator ranges_;
  uint64_t id_;
  int device_;
  int fd_ = -1;
  std::array<uint8_t, 64> ipc_{};
};

/// Copies @p layout's buffers (device memory, or host memory for a buffer decoded there) into
/// @p dst, device memory at least `layout.bytes` long, and waits; then drops the decoded batch.
/// @return the bytes copied (buffers, without padding).
[[nodiscard]] Result<uint64_t> copy_batch_to_device(BatchLayout& layout, uint8_t* dst, int device);

}  // namespace oc::daemon
