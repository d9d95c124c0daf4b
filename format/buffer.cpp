// SPDX-License-Identifier: Apache-2.0
#include "format/buffer.hpp"

#include <cstdlib>
#include <new>

#include "config/checked_size.hpp"

namespace oc::format {
namespace {

thread_local BufferArena* t_arena = nullptr;

struct HeapFree {
  void operator()(void* p) const noexcept { std::free(p); }
};

// 64-byte alignment is what Arrow recommends for SIMD and what CUDA's H2D copies like best.
// A zero-byte buffer still gets one line, so that data() is never null. The whole lines are
// returned (writable); callers slice them to the size asked for.
Buffer allocate_lines(size_t size, size_t& rounded) {
  const auto r = checked_round_up(size, 64);
  if (!r) throw std::bad_alloc();
  rounded = *r == 0 ? 64 : *r;
  if (t_arena != nullptr) return t_arena->allocate(rounded);
  void* p = std::aligned_alloc(64, rounded);
  if (p == nullptr) throw std::bad_alloc();
  std::shared_ptr<void> owner(p, HeapFree{});
  return Buffer::wrap(std::move(owner), static_cast<uint8_t*>(p), rounded);
}

size_t array_bytes(uint64_t count, uint64_t width) {
  const auto bytes = checked_mul(count, width);
  if (!bytes) throw std::bad_alloc();
  return *bytes;
}

}  // namespace

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
