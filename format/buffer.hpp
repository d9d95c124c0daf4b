// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief `Buffer`: shared, immutable bytes with an owner, sliceable without copying.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>

namespace oc::format {

class Buffer;

/// Where `Buffer::allocate` and its siblings take memory from on a thread inside an
/// `ArenaScope` (onecopyd decodes a client's batches straight into that client's slabs).
/// Implementations are thread-safe: `parallel_for` carries the scope to the threads it uses.
class BufferArena {
 public:
  virtual ~BufferArena() = default;
  /// @return @p bytes (a non-zero multiple of 64), 64-byte aligned, in a buffer whose owner
  ///         gives them back; its contents are unspecified. Throws `std::bad_alloc` only.
  [[nodiscard]] virtual Buffer allocate(size_t bytes) = 0;
};

/// Bytes of freed heap buffers (64 KiB and more) the process holds to reuse, at most the
/// knob `buffer_recycle_bytes`: the next buffers of their size come from there.
[[nodiscard]] size_t recycled_bytes();

/// Makes @p arena (nullptr: the heap) the source of this thread's buffer allocations until the
/// scope ends; scopes nest.
class ArenaScope {
 public:
  explicit ArenaScope(BufferArena* arena) noexcept;
  ~ArenaScope();
  ArenaScope(const ArenaScope&) = delete;
  ArenaScope& operator=(const ArenaScope&) = delete;

 private:
  BufferArena* outer_;
};

/// The arena of the innermost `ArenaScope` on this thread, or nullptr.
[[nodiscard]] BufferArena* current_arena() noexcept;

/// A view of bytes kept alive by a shared owner (a segment read, a decoder's output, ...).
/// Freshly allocated buffers are 64-byte aligned and may be written through `mutable_data()`
/// until they are shared.
class Buffer {
 public:
  Buffer() = default;

  /// Allocates @p size bytes, 64-byte aligned, zero-filled, from the thread's `BufferArena` if
  /// it has one, else from the heap, where blocks of 64 KiB and more freed earlier are reused
  /// (a bounded pool of pages already touched: no page faults, no kernel zeroing). Throws
  /// `std::bad_alloc` when the memory is not there (or @p size is too large to round up);
  /// decoders run under `DecodeContext`, which turns that into `Errc::out_of_memory` for the
  /// one decode.
  [[nodiscard]] static Buffer allocate(size_t size);
  /// Allocates @p size bytes, 64-byte aligned, for a caller that writes every one of them; only
  /// the padding up to the alignment is zeroed. Clearing output buffers that decoders overwrite
  /// anyway was the largest single cost of a full scan.
  [[nodiscard]] static Buffer allocate_for_overwrite(size_t size);
  /// `allocate` of @p count items of @p width bytes each. A product that overflows is an
  /// allocation that cannot succeed: `std::bad_alloc`, like any other (callers check sizes
  /// from files with `DecodeContext::check_alloc` first, so this is the last line only).
  [[nodiscard]] static Buffer allocate_array(uint64_t count, uint64_t width);
  /// `allocate_for_overwrite` of @p count items of @p width bytes each (see `allocate_array`).
  [[nodiscard]] static Buffer allocate_array_for_overwrite(uint64_t count, uint64_t width);
  /// Copies @p bytes into a new buffer.
  [[nodiscard]] static Buffer copy_of(std::span<const uint8_t> bytes);
  /// Wraps memory owned by @p owner.
  [[nodiscard]] static Buffer wrap(std::shared_ptr<const void> owner, const uint8_t* data,
                                   size_t size) {
    Buffer b;
    b.owner_ = std::move(owner);
    b.data_ = data;
    b.size_ = size;
    return b;
  }

  [[nodiscard]] const uint8_t* data() const noexcept { return data_; }
  [[nodiscard]] size_t size() const noexcept { return size_; }
  [[nodiscard]] bool empty() const noexcept { return size_ == 0; }
  [[nodiscard]] std::span<const uint8_t> span() const noexcept { return {data_, size_}; }
  template <class T>
  [[nodiscard]] const T* as() const noexcept {
    return reinterpret_cast<const T*>(data_);
  }
  /// Writable pointer; only for buffers this code allocated and has not shared yet.
  [[nodiscard]] uint8_t* mutable_data() noexcept { return const_cast<uint8_t*>(data_); }
  template <class T>
  [[nodiscard]] T* mutable_as() noexcept {
    return reinterpret_cast<T*>(mutable_data());
  }
  /// @return bytes [offset, offset + length) sharing this buffer's owner. Caller checks bounds.
  [[nodiscard]] Buffer slice(size_t offset, size_t length) const {
    return wrap(owner_, data_ + offset, length);
  }
  [[nodiscard]] const std::shared_ptr<const void>& owner() const noexcept { return owner_; }

 private:
  std::shared_ptr<const void> owner_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

/// Reads a little-endian scalar at @p p (file bytes are always little endian).
template <class T>
[[nodiscard]] inline T load_le(const uint8_t* p) noexcept {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;  // onecopy supports little-endian hosts only (checked in meson.build)
}

}  // namespace oc::format
