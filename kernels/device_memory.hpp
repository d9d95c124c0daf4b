// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief RAII owners for CUDA streams, stream-ordered device memory and pinned host memory.
///
/// Device memory comes from the device's default memory pool (`cudaMallocAsync`): allocation and
/// release are ordered on a stream, so a decode that allocates, uploads, launches and frees needs
/// no synchronization in between, and freed blocks are reused by later allocations on the pool.
/// Every constructor is a `Result`-returning factory; nothing here throws or aborts. Without
/// CUDA (kernels/no_cuda.cpp) every factory fails with `Errc::cuda`.
///
/// A stream is shared: every buffer allocated on it holds a reference, so a buffer handed to a
/// consumer (Arrow, DLPack, another process) can still be freed in its stream's order after the
/// decode session that made it is gone.
///
/// @note Not thread-safe: one `Stream` and the buffers ordered on it belong to one thread at a
/// time, except that a buffer may be released from any thread (a consumer's). Destructors never
/// fail: an error while freeing is dropped (the context is being torn down, or an earlier error
/// already reported it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "config/error.hpp"

struct CUstream_st;  // cudaStream_t is CUstream_st*; the header stays free of cuda_runtime.h

namespace oc::kernels {

/// A non-blocking CUDA stream on device 0, destroyed when its last owner (this object or a
/// buffer allocated on it) goes.
class Stream {
 public:
  /// @return a new stream; `Errc::cuda` when no device exists or creation fails.
  [[nodiscard]] static Result<Stream> create();
  /// @return a stream object owning nothing (a placeholder to move a real one into).
  [[nodiscard]] static Stream null() noexcept { return Stream(nullptr); }
  Stream(Stream&&) noexcept = default;
  Stream& operator=(Stream&&) noexcept = default;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  /// The `cudaStream_t`.
  [[nodiscard]] CUstream_st* handle() const noexcept { return handle_.get(); }
  /// Another reference to the stream, which keeps it alive.
  [[nodiscard]] std::shared_ptr<CUstream_st> share() const noexcept { return handle_; }
  /// Waits for all work queued on the stream; reports any asynchronous error.
  [[nodiscard]] Result<void> synchronize();

 private:
  explicit Stream(std::shared_ptr<CUstream_st> h) noexcept : handle_(std::move(h)) {}
  std::shared_ptr<CUstream_st> handle_;
};

/// Device memory allocated and freed in the order of one stream, which it keeps alive.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  /// @return @p bytes of device memory usable by work queued on @p stream after this call.
  /// Zero bytes gives an empty buffer without calling CUDA.
  [[nodiscard]] static Result<DeviceBuffer> allocate(size_t bytes, Stream& stream);
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  /// Frees the memory in the order of the allocating stream.
  ~DeviceBuffer();

  /// Frees the memory once the work queued so far on @p consumer (a stream that read it, such as
  /// a DLPack consumer's) has run, and the allocating stream's work too. A null @p consumer
  /// means any stream may still read it: the free waits for the whole device.
  void release_after(CUstream_st* consumer) noexcept;

  [[nodiscard]] void* data() const noexcept { return data_; }
  [[nodiscard]] size_t size() const noexcept { return size_; }
  template <class T>
  [[nodiscard]] T* as() const noexcept {
    return static_cast<T*>(data_);
  }

 private:
  void reset() noexcept;
  void* data_ = nullptr;
  size_t size_ = 0;
  std::shared_ptr<CUstream_st> stream_;
};

/// Page-locked host memory: the staging area of asynchronous host-to-device copies.
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  /// @return @p bytes of pinned host memory; `Errc::cuda` when pinning fails.
  [[nodiscard]] static Result<PinnedBuffer> allocate(size_t bytes);
  PinnedBuffer(PinnedBuffer&& other) noexcept;
  PinnedBuffer& operator=(PinnedBuffer&& other) noexcept;
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  /// @note The caller makes sure no copy still reads the buffer (synchronize its stream first).
  ~PinnedBuffer();

  [[nodiscard]] uint8_t* data() const noexcept { return data_; }
  [[nodiscard]] size_t size() const noexcept { return size_; }

 private:
  void reset() noexcept;
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

/// Makes CUDA device @p device current for the calling thread (every later call on this thread
/// uses it). @return `Errc::cuda` when there is no such device.
[[nodiscard]] Result<void> use_device(int device);

/// Queues a copy of @p bytes from host memory @p src to device memory @p dst on @p stream.
/// @note @p src must stay unchanged until the stream has passed the copy (pageable memory is
/// staged by the driver; pinned memory is read by the copy engine directly).
[[nodiscard]] Result<void> copy_to_device(void* dst, const void* src, size_t bytes, Stream& stream);

/// Queues a copy of @p bytes from device memory @p src to host memory @p dst on @p stream.
[[nodiscard]] Result<void> copy_to_host(void* dst, const void* src, size_t bytes, Stream& stream);

/// Copies @p bytes from @p src to @p dst, either in host or device memory (unified addressing
/// tells which), and waits for the copy.
[[nodiscard]] Result<void> copy_and_wait(void* dst, const void* src, size_t bytes);

/// Waits until the work queued so far on @p stream has run (null: on the whole current device).
[[nodiscard]] Result<void> wait_for_stream(CUstream_st* stream);

}  // namespace oc::kernels
