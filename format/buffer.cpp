// SPDX-License-Identifier: Apache-2.0
#include "format/buffer.hpp"

#include <sys/mman.h>

#include <cstdlib>
#include <new>

namespace oc::format {

namespace {
constexpr size_t kZeroPagesFrom = size_t{1} << 20;  // mmap threshold, bytes
}  // namespace

Buffer Buffer::allocate(size_t size) {
  // 64-byte alignment is what Arrow recommends for SIMD and what CUDA's H2D copies like best.
  const size_t rounded = (size + 63) & ~size_t{63};
  // Large buffers come straight from the kernel, whose fresh pages are already zero: clearing
  // them again was a tenth of a full scan's time.
  if (rounded >= kZeroPagesFrom) {
    void* m = ::mmap(nullptr, rounded, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) throw std::bad_alloc();
    std::shared_ptr<void> owner(m, [rounded](void* q) { ::munmap(q, rounded); });
    return wrap(std::move(owner), static_cast<const uint8_t*>(m), size);
  }
  void* p = std::aligned_alloc(64, rounded == 0 ? 64 : rounded);
  if (p == nullptr) throw std::bad_alloc();
  std::memset(p, 0, rounded == 0 ? 64 : rounded);
  std::shared_ptr<void> owner(p, [](void* q) { std::free(q); });
  return wrap(std::move(owner), static_cast<const uint8_t*>(p), size);
}

Buffer Buffer::copy_of(std::span<const uint8_t> bytes) {
  Buffer b = allocate(bytes.size());
  if (!bytes.empty()) std::memcpy(b.mutable_data(), bytes.data(), bytes.size());
  return b;
}

}  // namespace oc::format
