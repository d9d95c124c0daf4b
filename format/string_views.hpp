// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief Strings and binaries in Arrow's view layout (`string_view` / `binary_view`, C Data
/// Interface formats "vu" / "vz"): building, checking, gathering and converting them.
///
/// A utf8 or binary `Column` is in one of two layouts (`Column::string_views`):
///
/// | layout  | `buffers` (after the validity bitmap)                                        |
/// |---------|------------------------------------------------------------------------------|
/// | offsets | [i32 offsets (length + 1), bytes]                                            |
/// | views   | [16-byte views (offset + length of them), data_0 .. data_{k-1}, i64 sizes of the k
/// data buffers] |
///
/// One view, little endian (Arrow's layout, and Vortex's `vortex.varbinview`):
///
///   bytes 0..4    i32 size
///   size <= 12:   bytes 4..16  the value itself, zero padded
///   size  > 12:   bytes 4..8   the value's first four bytes (a comparison prefix)
///                 bytes 8..12  i32 index of the data buffer that holds the value
///                 bytes 12..16 i32 offset of the value in that buffer
///
/// The last buffer is the C Data Interface's "variadic buffer sizes", kept in the column so that
/// every consumer of `buffers` (the Arrow export, onecopyd's slab layout) sees Arrow's buffers.
///
/// Invariant of every views column: the view of a valid row lies within its data buffer, and
/// every view is canonical (a null row's view is all zeros, inlined values are zero padded, a
/// prefix equals its value's first bytes), so consumers that compare views as Arrow does get
/// the right answer. `make_views_column` establishes it for views read from a file; the other
/// functions here keep it.
///
/// Views let a varbinview segment pass through without copying a string, and a dictionary
/// gather write 16 bytes a row instead of copying values; offsets are what consumers that index
/// a flat byte buffer need (onecopy.torch's batch gather, the GPU host plans).
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>
#include <vector>

#include "config/error.hpp"
#include "format/column.hpp"

namespace oc::format {

/// Bytes of one view.
inline constexpr uint64_t kViewBytes = 16;
/// Values of at most this many bytes are stored inside their view.
inline constexpr uint32_t kMaxInlined = 12;

/// A views column of @p n rows of type @p t over @p views (n views from its first byte) and
/// @p data, with @p validity (n bits from 0, or empty) and @p null_count. Every view of a valid
/// row is checked (`Errc::corrupt` naming the row when its bytes lie outside its data buffer,
/// or past what Arrow's i32 fields hold); views that are not canonical are rewritten in a copy
/// of @p views, so a writer's garbage under a null row never reaches a consumer.
[[nodiscard]] Result<ColumnPtr> make_views_column(const DTypePtr& t, uint64_t n, Buffer validity,
                                                  int64_t null_count, Buffer views,
                                                  std::vector<Buffer> data);

namespace detail {
// Bytes 4..16 of an inlined view: the value's @p size bytes from @p v, zeros after. @p v may be
// read 12 bytes past its start when @p readable says so (one unaligned load instead of a copy
// of variable length).
inline void store_inlined(uint8_t* out, const uint8_t* v, uint32_t size, bool readable) noexcept {
  uint8_t tail[kMaxInlined] = {};
  if (readable) {
    uint64_t lo;
    uint32_t hi;
    std::memcpy(&lo, v, 8);
    std::memcpy(&hi, v + 8, 4);
    // Little endian: the value's bytes are the low ones; keep `size` of the 12.
    lo = size >= 8 ? lo : (size == 0 ? 0 : lo & ((uint64_t{1} << (8 * size)) - 1));
    hi = size >= 12 ? hi : (size <= 8 ? 0 : hi & ((uint32_t{1} << (8 * (size - 8))) - 1));
    std::memcpy(tail, &lo, 8);
    std::memcpy(tail + 8, &hi, 4);
  } else if (size > 0) {
    std::memcpy(tail, v, size);
  }
  std::memcpy(out + 4, tail, kMaxInlined);
}

}  // namespace detail

/// Writes at @p out the canonical view of the @p size bytes at @p value, stored (when longer
/// than kMaxInlined) at @p offset of data buffer @p buffer. Reads exactly @p size bytes.
inline void store_view(uint8_t* out, const uint8_t* value, uint32_t size, uint32_t buffer,
                       uint32_t offset) noexcept {
  std::memcpy(out, &size, 4);
  if (size <= kMaxInlined) {
    detail::store_inlined(out, value, size, false);
    return;
  }
  std::memcpy(out + 4, value, 4);
  std::memcpy(out + 8, &buffer, 4);
  std::memcpy(out + 12, &offset, 4);
}

/// Writes at @p v the canonical view of the @p size bytes at offset @p at of @p bytes, data
/// buffer 0, of which @p readable bytes may be read (at least up to the value's end): a value
/// stored back to back with others, as FSST and offsets leave them.
/// @return whether the value is long (the view needs @p bytes as its data buffer).
inline bool store_view_at(uint8_t* v, const uint8_t* bytes, uint64_t readable, uint32_t at,
                          uint32_t size) noexcept {
  if (size <= kMaxInlined) {
    std::memcpy(v, &size, 4);
    detail::store_inlined(v, bytes + at, size, uint64_t{at} + kMaxInlined <= readable);
    return false;
  }
  store_view(v, bytes + at, size, 0, at);
  return true;
}

/// Row @p i of a utf8/binary column in either layout (the caller knows the row is valid).
[[nodiscard]] std::string_view string_at(const Column& c, uint64_t i) noexcept;

/// @p c with every utf8/binary column in its tree (struct fields, list elements, fixed-size
/// list elements) in layout @p to; @p c itself when nothing changes. To views, no value is
/// copied (views over the bytes buffer); to offsets, every value is.
[[nodiscard]] Result<ColumnPtr> with_string_layout(const ColumnPtr& c, StringLayout to);

/// @p c (utf8/binary, not its children) in the offsets layout: for code that indexes the bytes.
[[nodiscard]] Result<ColumnPtr> string_offsets(const ColumnPtr& c);

/// Rows @p idx of views column @p c, sharing its data buffers; a row whose bit in @p valid (n
/// bits, when given) is clear gets a null view. Indices are checked by the caller.
[[nodiscard]] Buffer gather_views(const Column& c, std::span<const uint64_t> idx,
                                  const uint8_t* valid);

/// Rows codes[0..n) of views column @p values, for an unsigned integer column @p codes (u8 to
/// u64) without nulls whose every value is below values.length (checked by the caller).
[[nodiscard]] Buffer gather_views_by_code(const Column& values, const Column& codes);

/// The views of @p parts (views columns) back to back, and their data buffers in order, each
/// view renumbered to its buffer's new index; `Errc::invalid` past 2^31 data buffers.
struct ConcatenatedViews {
  Buffer views;
  std::vector<Buffer> data;
};
[[nodiscard]] Result<ConcatenatedViews> concat_views(std::span<const ColumnPtr> parts);

/// The views column's buffers: @p views, then @p data and their i64 sizes.
[[nodiscard]] std::vector<Buffer> view_buffers(Buffer views, std::vector<Buffer> data);

/// The data buffers of views column @p c (its buffers between the views and the sizes).
[[nodiscard]] std::span<const Buffer> view_data(const Column& c) noexcept;

}  // namespace oc::format
