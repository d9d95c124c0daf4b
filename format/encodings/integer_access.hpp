// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief Typed access to decoded integer children of any width (signed values keep their sign,
/// unlike `unsigned_rows` in integers.hpp), and re-basing a child's validity to bit 0.
#pragma once

#include <cstdint>

#include "format/column.hpp"
#include "format/decode.hpp"

namespace oc::format::encodings {

/// Calls @p fn with a pointer to the logical values of the integer column @p c, typed by its
/// PType (`const uint8_t*` ... `const int64_t*`).
/// @return `Errc::corrupt` if @p c is not an integer column.
template <class Fn>
[[nodiscard]] Result<void> visit_integers(const Column& c, Fn&& fn) {
  const DType& s = c.dtype->storage();
  OC_EXPECT(s.kind == TypeKind::primitive && !ptype_is_float(s.ptype), corrupt,
            "expected an integer column, got {}", c.dtype->to_string());
  switch (s.ptype) {
    case PType::u8:
      fn(c.values<uint8_t>());
      break;
    case PType::u16:
      fn(c.values<uint16_t>());
      break;
    case PType::u32:
      fn(c.values<uint32_t>());
      break;
    case PType::u64:
      fn(c.values<uint64_t>());
      break;
    case PType::i8:
      fn(c.values<int8_t>());
      break;
    case PType::i16:
      fn(c.values<int16_t>());
      break;
    case PType::i32:
      fn(c.values<int32_t>());
      break;
    case PType::i64:
      fn(c.values<int64_t>());
      break;
    default:
      break;
  }
  return {};
}

/// @return the validity of @p c as a bitmap whose bit 0 is logical row 0 (empty when all
/// valid), the form `with_validity` takes.
[[nodiscard]] inline Buffer validity_from_bit0(const Column& c) {
  if (c.validity.empty() || c.null_count == 0) return Buffer();
  if (c.offset == 0) return c.validity;
  Buffer out = make_bitmap(c.length, false);
  for (uint64_t i = 0; i < c.length; ++i) {
    if (c.is_valid(i)) bitmap_set(out.mutable_data(), i, true);
  }
  return out;
}

}  // namespace oc::format::encodings
