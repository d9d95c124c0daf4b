// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief `Column`: a decoded array in Arrow columnar layout, and the operations on it.
///
/// Every decoder produces a `Column`. Its buffers follow the Arrow columnar format for the
/// column's Arrow type (see `arrow_format`), so export through the Arrow C Data Interface hands
/// the same memory to consumers without a copy:
///
/// | DType                | `buffers` (after the validity bitmap)                          |
/// |----------------------|----------------------------------------------------------------|
/// | null                 | none                                                           |
/// | bool                 | [values bitmap, LSB first]                                     |
/// | primitive, temporal  | [values, little endian]                                        |
/// | decimal              | [values as i128 (precision <= 38) or i256]                      |
/// | utf8, binary         | [i32 offsets (length + 1), bytes], or views: format/string_views.hpp |
/// | list                 | [i32 offsets (length + 1)], children = [elements]              |
/// | fixed-size list      | none, children = [elements] (length x size of them)            |
/// | struct               | none, children = fields                                        |
///
/// `offset` is Arrow's: logical element i lives at physical index offset + i of every buffer, and
/// children are indexed through the parent's offsets (or offset + i for struct children).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "config/error.hpp"
#include "format/buffer.hpp"
#include "format/dtype.hpp"

namespace oc::format {

struct Column;
using ColumnPtr = std::shared_ptr<const Column>;

/// How utf8 and binary columns lay out their values (format/string_views.hpp): Arrow's string
/// views (C Data Interface "vu" / "vz"), what scans deliver unless asked otherwise, or i32
/// offsets into one bytes buffer ("u" / "z").
enum class StringLayout : uint8_t { views, offsets };

struct Column {
  DTypePtr dtype;
  uint64_t length = 0;
  uint64_t offset = 0;
  int64_t null_count = 0;  ///< exact; 0 when `validity` is empty
  Buffer validity;         ///< Arrow validity bitmap, empty when every value is valid
  std::vector<Buffer> buffers;
  std::vector<ColumnPtr> children;
  /// utf8/binary only: the buffers are views (format/string_views.hpp), not offsets.
  bool string_views = false;
  /// The CUDA device whose memory holds the buffers (a device scan's columns:
  /// client/device_scan.hpp), or -1 for host memory. Host code reads only host columns' buffers.
  int32_t device = -1;

  [[nodiscard]] bool is_valid(uint64_t i) const noexcept {
    if (validity.empty()) return true;
    const uint64_t b = offset + i;
    return (validity.data()[b >> 3] >> (b & 7)) & 1;
  }
  /// Typed pointer to logical element 0 of a fixed-width values buffer (index 0).
  template <class T>
  [[nodiscard]] const T* values() const noexcept {
    return buffers[0].as<T>() + offset;
  }
  /// For utf8/binary in the offsets layout, and list: the i32 offsets, from logical element 0.
  [[nodiscard]] const int32_t* offsets() const noexcept {
    return buffers[0].as<int32_t>() + offset;
  }
};

/// Logical row @p i of an unsigned integer column (u8 to u64), widened to 64 bits.
/// @note The caller has checked the column's ptype; values of other widths read as u64.
[[nodiscard]] uint64_t unsigned_at(const Column& c, uint64_t i) noexcept;

/// Every row of an unsigned integer column (u8 to u64) widened to 64 bits, nulls included as
/// whatever their slots hold. Same caller contract as `unsigned_at`.
[[nodiscard]] std::vector<uint64_t> unsigned_values(const Column& c);

/// The largest value of an unsigned integer column (u8 to u64), nulls included as whatever
/// their slots hold; 0 for no rows. Same caller contract as `unsigned_at`.
[[nodiscard]] uint64_t max_unsigned(const Column& c) noexcept;

/// Arrow C Data Interface format string for @p t ("l", "vu", "+s", "tss:UTC", ...), with
/// strings and binaries in layout @p strings.
[[nodiscard]] Result<std::string> arrow_format(const DType& t, StringLayout strings);

/// Bytes of one value in the first buffer of a fixed-width column of type @p t (0 if not fixed).
[[nodiscard]] size_t fixed_width_of(const DType& t);

/// The validity bitmap of @p c from bit 0 (shared when its offset is 0; empty when every row is
/// valid).
[[nodiscard]] Buffer validity_from_zero(const Column& c);

/// Builds a validity bitmap of @p len bits, all valid, to be cleared by the caller.
[[nodiscard]] Buffer make_bitmap(uint64_t len, bool value);
inline void bitmap_set(uint8_t* bits, uint64_t i, bool v) noexcept {
  if (v)
    bits[i >> 3] |= static_cast<uint8_t>(1u << (i & 7));
  else
    bits[i >> 3] &= static_cast<uint8_t>(~(1u << (i & 7)));
}
[[nodiscard]] inline bool bitmap_get(const uint8_t* bits, uint64_t i) noexcept {
  return (bits[i >> 3] >> (i & 7)) & 1;
}
/// Copies bits [src_off, src_off + len) of @p src to @p dst from bit @p dst_off on.
void copy_bits(const uint8_t* src, uint64_t src_off, uint8_t* dst, uint64_t dst_off, uint64_t len);
/// Counts zero bits in [offset, offset + len) of @p bits.
[[nodiscard]] int64_t count_nulls(const uint8_t* bits, uint64_t offset, uint64_t len);

/// A column of @p len nulls of type @p t (every value invalid, buffers zeroed).
[[nodiscard]] Result<ColumnPtr> make_all_null(const DTypePtr& t, uint64_t len);

/// Rows [begin, begin + len) of @p c, sharing its buffers. Caller checks bounds.
[[nodiscard]] ColumnPtr slice(const ColumnPtr& c, uint64_t begin, uint64_t len);

/// Gathers rows @p indices of @p c into a new column (indices are checked: `Errc::invalid`).
/// @p index_valid (optional, one bit per index) marks indices that produce a null.
[[nodiscard]] Result<ColumnPtr> take(const ColumnPtr& c, std::span<const uint64_t> indices,
                                     const uint8_t* index_valid = nullptr);

/// A dictionary's gather: row i of the result is row codes[i] of @p values, null where the code
/// is null; @p codes is an unsigned integer column (u8 to u64). A valid code at or past
/// values->length is `Errc::corrupt`, naming it and its position. String views without nulls
/// are gathered in the codes' own width, 16 bytes a row.
[[nodiscard]] Result<ColumnPtr> gather_codes(const ColumnPtr& values, const Column& codes);

/// Concatenates columns of one dtype.
[[nodiscard]] Result<ColumnPtr> concat(std::span<const ColumnPtr> parts);

/// Returns @p c with validity replaced by @p validity (a bitmap of c->length bits from 0, or
/// empty) and dtype @p t. Used when a wrapper encoding supplies nulls for its child's values.
[[nodiscard]] ColumnPtr with_validity(const ColumnPtr& c, Buffer validity, const DTypePtr& t);

/// Copies a column so that it has offset 0 and compact buffers (used before rewriting values).
[[nodiscard]] Result<ColumnPtr> compact(const ColumnPtr& c);

}  // namespace oc::format
