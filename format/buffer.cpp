// SPDX-License-Identifier: Apache-2.0
#include "format/buffer.hpp"

#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <map>
#include <mutex>
#include <new>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define OC_POOL_POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define OC_POOL_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define OC_POOL_POISON(p, n) ((void)(p), (void)(n))
#define OC_POOL_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#include "config/checked_size.hpp"
#include "config/defaults.hpp"

namespace oc::format {
namespace {

thread_local BufferArena* t_arena = nullptr;

struct HeapFree {
  void operator()(void* p) const noexcept { std::free(p); }
};

// Heap lines of at least kRecycleFrom bytes, once freed, wait in a pool for the next allocation
// of their size class, up to recycle_bytes() in all: memory the process has touched already.
// Fresh pages cost a page fault and the kernel's zeroing each, a quarter of a full scan's time
// when every scan's buffers came fresh from the kernel (glibc hands large blocks back to it on
// free). Repeated scans keep the same peak memory; between them the pool holds what they freed.
constexpr size_t kRecycleFrom = size_t{64} << 10;

// The knob buffer_recycle_bytes, at most a sixteenth of the machine's memory.
size_t recycle_bytes() {
  static const size_t ram_share = [] {
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page <= 0) return SIZE_MAX;
    return static_cast<size_t>(pages) / 16 * static_cast<size_t>(page);
  }();
  return std::min<uint64_t>(defaults().buffer_recycle_bytes, ram_share);
}

// Sizes from kRecycleFrom up round to four classes per power of two (at most 25% more).
size_t recycle_class(size_t bytes) {
  const size_t step = std::bit_ceil(bytes) >> 3;
  return (bytes + step - 1) / step * step;
}

class RecyclePool {
 public:
  // @return a block of @p bytes (a class size) given back earlier, or nullptr.
  void* take(size_t bytes) {
    std::lock_guard lock(mu_);
    auto it = free_.find(bytes);
    if (it == free_.end() || it->second.empty()) return nullptr;
    void* p = it->second.back();
    it->second.pop_back();
    pooled_ -= bytes;
    OC_POOL_UNPOISON(p, bytes);
    return p;
  }
  size_t pooled() {
    std::lock_guard lock(mu_);
    return pooled_;
  }
  // Keeps @p p (a block of @p bytes) for `take`, or frees it when the pool is full.
  void give(void* p, size_t bytes) noexcept {
    {
      std::lock_guard lock(mu_);
      if (pooled_ + bytes <= recycle_bytes()) {
        try {
          free_[bytes].push_back(p);
          pooled_ += bytes;
          // Under ASan a use after free of a pooled block is still reported.
          OC_POOL_POISON(p, bytes);
          return;
        } catch (const std::bad_alloc&) {
        }
      }
    }
    std::free(p);
  }

 private:
  std::mutex mu_;
  std::map<size_t, std::vector<void*>> free_;  // by class size, the most recently freed last
  size_t pooled_ = 0;
};

// Never destroyed: buffers may be freed by static destructors after it would have been.
RecyclePool& recycle_pool() {
  static auto* pool = new RecyclePool;
  return *pool;
}

struct PoolFree {
  size_t bytes;
  void operator()(void* p) const noexcept { recycle_pool().give(p, bytes); }
};

// @p rounded bytes (a multiple of 64) from the heap, recycled when large (see RecyclePool).
Buffer heap_lines(size_t rounded) {
  if (rounded < kRecycleFrom) {
    void* p = std::aligned_alloc(64, rounded);
    if (p == nullptr) throw std::bad_alloc();
    return Buffer::wrap(std::shared_ptr<void>(p, HeapFree{}), static_cast<uint8_t*>(p), rounded);
  }
  const size_t bytes = recycle_class(rounded);
  void* p = recycle_pool().take(bytes);
  if (p == nullptr) p = std::aligned_alloc(64, bytes);
  if (p == nullptr) throw std::bad_alloc();
  return Buffer::wrap(std::shared_ptr<void>(p, PoolFree{bytes}), static_cast<uint8_t*>(p), rounded);
}

// 64-byte alignment is what Arrow recommends for SIMD and what CUDA's H2D copies like best.
// A zero-byte buffer still gets one line, so that data() is never null. The whole lines are
// returned (writable); callers slice them to the size asked for.
Buffer allocate_lines(size_t size, size_t& rounded) {
  const auto r = checked_round_up(size, 64);
  if (!r) throw std::bad_alloc();
  rounded = *r == 0 ? 64 : *r;
  if (t_arena != nullptr) return t_arena->allocate(rounded);
  return heap_lines(rounded);
}

size_t array_bytes(uint64_t count, uint64_t width) {
  const auto bytes = checked_mul(count, width);
  if (!bytes) throw std::bad_alloc();
  return *bytes;
}

}  // namespace

size_t recycled_bytes() { return recycle_pool().pooled(); }

ArenaScope::ArenaScope(BufferArena* arena) noexcept : outer_(t_arena) { t_arena = arena; }
ArenaScope::~ArenaScope() { t_arena = outer_; }

BufferArena* current_arena() noexcept { return t_arena; }

Buffer Buffer::allocate_for_overwrite(size_t size) {
  size_t rounded = 0;
  Buffer lines = allocate_lines(size, rounded);
  std::memset(lines.mutable_data() + size, 0, rounded - size);
  return lines.slice(0, size);
}

Buffer Buffer::allocate(size_t size) {
  size_t rounded = 0;
  Buffer lines = allocate_lines(size, rounded);
  std::memset(lines.mutable_data(), 0, rounded);
  return lines.slice(0, size);
}

Buffer Buffer::allocate_array(uint64_t count, uint64_t width) {
  return allocate(array_bytes(count, width));
}

Buffer Buffer::allocate_array_for_overwrite(uint64_t count, uint64_t width) {
  return allocate_for_overwrite(array_bytes(count, width));
}

Buffer Buffer::copy_of(std::span<const uint8_t> bytes) {
  Buffer b = allocate_for_overwrite(bytes.size());
  if (!bytes.empty()) std::memcpy(b.mutable_data(), bytes.data(), bytes.size());
  return b;
}

}  // namespace oc::format
