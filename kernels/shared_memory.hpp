// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief Device memory that another process maps: how onecopyd hands decoded columns to
/// trainers without a copy, as memfd slabs do for host memory.
///
/// Two mechanisms, the first where the driver has it:
///   vmm: CUDA virtual memory management. `cuMemCreate` with POSIX file-descriptor handles
///        (CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR), mapped into a reserved range of this
///        process; `export_fd` gives a descriptor that travels over a Unix socket with
///        SCM_RIGHTS, and the importer maps it with `cuMemImportFromShareableHandle`,
///        `cuMemMap` and `cuMemSetAccess`. Sizes round up to the allocation granularity.
///   ipc: `cudaMalloc` memory and its 64-byte `cudaIpcMemHandle_t`, opened with
///        `cudaIpcOpenMemHandle` (any device since Kepler; no descriptor to pass, and the
///        handle is a capability: whoever holds its bytes may map the memory).
/// The driver API is reached through the runtime's entry-point lookup
/// (`cudaGetDriverEntryPointByVersion`), so nothing links libcuda and the binaries still start
/// without a driver.
///
/// @note Untested on GPU hardware so far (onecopy-tests-gpu maps an export in the same
/// process). Without CUDA (kernels/no_cuda.cpp) every factory
/// fails with `Errc::cuda`.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "config/error.hpp"

namespace oc::kernels {

/// How device memory is shared with other processes.
enum class ShareKind : uint8_t { vmm, ipc };

/// @return the mechanism device @p device supports: vmm when the driver offers VMM with POSIX
/// descriptors there, else ipc; `Errc::cuda` without a driver or device.
[[nodiscard]] Result<ShareKind> share_kind(int device);

/// Device memory shared between processes: allocated here for others to map, or another
/// process's allocation mapped here.
class SharedDeviceMemory {
 public:
  SharedDeviceMemory() = default;
  /// @return at least @p bytes on @p device, shared the way @p kind says.
  [[nodiscard]] static Result<SharedDeviceMemory> allocate(int device, size_t bytes,
                                                           ShareKind kind);
  /// Maps @p bytes (the exporter's `size()`) of the VMM allocation behind descriptor @p fd on
  /// @p device, readable and writable by this process. @p fd stays the caller's.
  [[nodiscard]] static Result<SharedDeviceMemory> import_fd(int device, int fd, size_t bytes);
  /// Opens the cudaMalloc memory behind IPC handle @p handle on @p device.
  [[nodiscard]] static Result<SharedDeviceMemory> import_ipc(int device,
                                                             const std::array<uint8_t, 64>& handle);
  SharedDeviceMemory(SharedDeviceMemory&& other) noexcept;
  SharedDeviceMemory& operator=(SharedDeviceMemory&& other) noexcept;
  SharedDeviceMemory(const SharedDeviceMemory&) = delete;
  SharedDeviceMemory& operator=(const SharedDeviceMemory&) = delete;
  /// Unmaps and releases this process's reference; the memory lives until every process that
  /// maps it has released it.
  ~SharedDeviceMemory();

  [[nodiscard]] void* data() const noexcept { return data_; }
  [[nodiscard]] size_t size() const noexcept {
    return size_;
  }  ///< allocated: rounded up to the granularity
  [[nodiscard]] ShareKind kind() const noexcept { return kind_; }
  [[nodiscard]] bool imported() const noexcept { return imported_; }
  /// vmm: a new descriptor for the allocation, owned by the caller (close it once sent).
  [[nodiscard]] Result<int> export_fd() const;
  /// ipc, allocated here: the handle's 64 bytes.
  [[nodiscard]] Result<std::array<uint8_t, 64>> ipc_handle() const;

 private:
  void reset() noexcept;
  void* data_ = nullptr;
  size_t size_ = 0;
  unsigned long long handle_ = 0;  // vmm: the CUmemGenericAllocationHandle
  ShareKind kind_ = ShareKind::vmm;
  bool imported_ = false;
};

}  // namespace oc::kernels
