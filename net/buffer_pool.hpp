// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief Pinned destination memory: where response bodies land and where decoders read.
///
/// One region of page-aligned anonymous memory (`MAP_HUGETLB` when the kernel has hugepages,
/// else `MADV_HUGEPAGE`), sized by the `net_pool_bytes` knob, registered with every I/O thread's
/// ring as fixed buffers and, when a CUDA device exists, with `cudaHostRegister`, so the GPU can
/// DMA from it. Leases are carved out of it; when it is full, a lease falls back to plain
/// anonymous memory (counted, still correct, just not registered).
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "config/error.hpp"

namespace oc::net {

/// Where a lease lives: index of the registered buffer and its base, for READ_FIXED.
struct FixedSlot {
  int buf_index = -1;  ///< -1 when the memory is not registered
  std::byte* base = nullptr;
};

/// A piece of destination memory. Movable; returned to the pool when the last owner drops it.
class Lease {
 public:
  Lease() = default;
  [[nodiscard]] std::span<std::byte> bytes() const noexcept { return {data_, size_}; }
  [[nodiscard]] std::byte* data() const noexcept { return data_; }
  [[nodiscard]] size_t size() const noexcept { return size_; }
  [[nodiscard]] bool pinned() const noexcept { return pinned_; }  ///< inside the pool
  /// Shares ownership, e.g. with a `format::Buffer` that outlives the request.
  [[nodiscard]] std::shared_ptr<void> owner() const noexcept { return owner_; }

 private:
  friend class BufferPool;
  std::byte* data_ = nullptr;
  size_t size_ = 0;
  bool pinned_ = false;
  std::shared_ptr<void> owner_;
};

struct PoolCounters {
  uint64_t capacity = 0;
  uint64_t in_use = 0;
  uint64_t fallback_leases = 0;  ///< leases served outside the pool because it was full
  bool hugepages = false;
  bool cuda_registered = false;
};

class BufferPool {
 public:
  /// @return the process-wide pool, created on first use with `defaults().net_pool_bytes`.
  [[nodiscard]] static BufferPool& global();

  /// @return @p bytes of page-aligned memory (pooled if room, else a fallback mapping).
  [[nodiscard]] Result<Lease> acquire(size_t bytes);

  /// @return the registered-buffer index and base holding [p, p+n), or buf_index -1.
  [[nodiscard]] FixedSlot fixed_slot(const void* p, size_t n) const noexcept;
  /// The iovecs to pass to io_uring_register_buffers (each at most 1 GiB).
  [[nodiscard]] std::span<const struct iovec> registration() const noexcept;

  [[nodiscard]] PoolCounters counters() const;

  explicit BufferPool(size_t capacity);
  ~BufferPool();
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace oc::net
