// SPDX-License-Identifier: Apache-2.0
#include "format/buffer.hpp"

#include <cstdlib>
#include <new>

namespace oc::format {

Buffer Buffer::allocate_for_overwrite(size_t size) {
  const size_t rounded = (size + 63) & ~size_t{63};
  void* p = std::aligned_alloc(64, rounded == 0 ? 64 : rounded);
  if (p == nullptr) throw std::bad_alloc();
  std::memset(static_cast<uint8_t*>(p) + size, 0, (rounded == 0 ? 64 : rounded) - size);
  std::shared_ptr<void> owner(p, [](void* q) { std::free(q); });
  return wrap(std::move(owner), static_cast<const uint8_t*>(p), size);
}

Buffer Buffer::allocate(size_t size) {
  // 64-byte alignment is what Arrow recommends for SIMD and what CUDA's H2D copies like best.
  const size_t rounded = (size + 63) & ~size_t{63};
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
