// SPDX-License-Identifier: Apache-2.0
#include "format/buffer.hpp"

#include <cstdlib>
#include <new>

#include "config/checked_size.hpp"

namespace oc::format {
namespace {

// 64-byte alignment is what Arrow recommends for SIMD and what CUDA's H2D copies like best.
// A zero-byte buffer still gets one line, so that data() is never null.
uint8_t* allocate_lines(size_t size, size_t& rounded) {
  const auto r = checked_round_up(size, 64);
  if (!r) throw std::bad_alloc();
  rounded = *r == 0 ? 64 : *r;
  void* p = std::aligned_alloc(64, rounded);
  if (p == nullptr) throw std::bad_alloc();
  return static_cast<uint8_t*>(p);
}

Buffer owned(uint8_t* p, size_t size) {
  std::shared_ptr<void> owner(p, [](void* q) { std::free(q); });
  return Buffer::wrap(std::move(owner), p, size);
}

size_t array_bytes(uint64_t count, uint64_t width) {
  const auto bytes = checked_mul(count, width);
  if (!bytes) throw std::bad_alloc();
  return *bytes;
}

}  // namespace

Buffer Buffer::allocate_for_overwrite(size_t size) {
  size_t rounded = 0;
  uint8_t* p = allocate_lines(size, rounded);
  std::memset(p + size, 0, rounded - size);
  return owned(p, size);
}

Buffer Buffer::allocate(size_t size) {
  size_t rounded = 0;
  uint8_t* p = allocate_lines(size, rounded);
  std::memset(p, 0, rounded);
  return owned(p, size);
}

Buffer Buffer::allocate_array(uint64_t count, uint64_t width) {
  return allocate(array_bytes(count, width));
}

Buffer Buffer::allocate_array_for_overwrite(uint64_t count, uint64_t width) {
  return allocate_for_overwrite(array_bytes(count, width));
}

Buffer Buffer::copy_of(std::span<const uint8_t> bytes) {
  Buffer b = allocate(bytes.size());
  if (!bytes.empty()) std::memcpy(b.mutable_data(), bytes.data(), bytes.size());
  return b;
}

}  // namespace oc::format
