// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief Reading decoded integer children (offsets, lengths, codes) as unsigned 64-bit values.
///
/// Several encodings store positions or sizes in an integer child of a ptype named by their
/// metadata (vortex.varbin offsets, vortex.fsst lengths and offsets, vortex.dict codes). Any
/// integer ptype may appear, signed ones included; a negative value is corrupt input.
#pragma once

#include <cstdint>
#include <string_view>
#include <type_traits>
#include <vector>

#include "config/error.hpp"
#include "format/column.hpp"
#include "format/decode.hpp"

namespace oc::format::encodings {

/// @return the integer ptype named by a metadata field, or `Errc::corrupt` naming @p what when
/// the raw value is not a ptype or names a float.
[[nodiscard]] inline Result<PType> integer_ptype(uint64_t raw, std::string_view what) {
  OC_ASSIGN_OR_RETURN(PType p, ptype_from(raw));
  OC_EXPECT(!ptype_is_float(p), corrupt, "{} must be an integer type, got {}", what, ptype_name(p));
  return p;
}

namespace detail {

// unsigned_rows for one stored type T: a loop per type, not a switch per row. Signed values are
// widened first and checked in a second pass, so the widening loop has no exit and vectorises.
template <class T>
Result<void> widen_rows(const Column& c, const uint8_t* base, std::vector<uint64_t>& out,
                        std::string_view what) {
  uint64_t* o = out.data();
  const uint64_t n = c.length;
  if (c.validity.empty()) {
    for (uint64_t i = 0; i < n; ++i) {
      const T v = load_le<T>(base + i * sizeof(T));
      o[i] = static_cast<uint64_t>(
          static_cast<std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>>(v));
    }
  } else {
    for (uint64_t i = 0; i < n; ++i) {
      const T v = load_le<T>(base + i * sizeof(T));
      o[i] = c.is_valid(i)
                 ? static_cast<uint64_t>(
                       static_cast<std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>>(v))
                 : 0;
    }
  }
  if constexpr (std::is_signed_v<T>) {
    uint64_t any_negative = 0;
    for (uint64_t i = 0; i < n; ++i) any_negative |= o[i] >> 63;
    if (any_negative) {
      for (uint64_t i = 0; i < n; ++i) {
        OC_EXPECT(o[i] >> 63 == 0, corrupt, "{} holds negative value {} at row {}", what,
                  static_cast<int64_t>(o[i]), i);
      }
    }
  }
  return {};
}

}  // namespace detail

/// Reads every logical row of the primitive integer column @p c as u64.
/// Null rows read as 0 and are not checked; a negative valid value is `Errc::corrupt`.
/// @param what names the column in error messages ("varbin offsets").
/// @note Allocates 8 bytes per row: the caller checks `c.length` against its limits first.
[[nodiscard]] inline Result<std::vector<uint64_t>> unsigned_rows(const Column& c,
                                                                 std::string_view what) {
  const DType& t = c.dtype->storage();
  OC_EXPECT(t.kind == TypeKind::primitive && !ptype_is_float(t.ptype), corrupt,
            "{} must be integers, got {}", what, c.dtype->to_string());
  std::vector<uint64_t> out(c.length);
  const uint8_t* base = c.buffers[0].data() + c.offset * ptype_width(t.ptype);
  Result<void> r;
  switch (t.ptype) {
    case PType::u8:
      r = detail::widen_rows<uint8_t>(c, base, out, what);
      break;
    case PType::u16:
      r = detail::widen_rows<uint16_t>(c, base, out, what);
      break;
    case PType::u32:
      r = detail::widen_rows<uint32_t>(c, base, out, what);
      break;
    case PType::u64:
      r = detail::widen_rows<uint64_t>(c, base, out, what);
      break;
    case PType::i8:
      r = detail::widen_rows<int8_t>(c, base, out, what);
      break;
    case PType::i16:
      r = detail::widen_rows<int16_t>(c, base, out, what);
      break;
    case PType::i32:
      r = detail::widen_rows<int32_t>(c, base, out, what);
      break;
    default:
      r = detail::widen_rows<int64_t>(c, base, out, what);
      break;
  }
  OC_TRY(r);
  return out;
}

/// Decodes child @p index of @p node as @p len non-nullable integers of @p ptype and reads them
/// as u64 (see `unsigned_rows`), after checking the allocation against the context's limit.
[[nodiscard]] inline Result<std::vector<uint64_t>> decode_unsigned_child(const ArrayView& node,
                                                                         size_t index, PType ptype,
                                                                         uint64_t len,
                                                                         DecodeContext& ctx,
                                                                         std::string_view what) {
  OC_EXPECT(index < node.children.size(), corrupt, "{} has no {} child", node.encoding, what);
  OC_TRY(ctx.check_alloc(len, sizeof(uint64_t), what));
  OC_ASSIGN_OR_RETURN(ColumnPtr c,
                      ctx.decode(node.children[index], DType::make_primitive(ptype, false), len));
  return unsigned_rows(*c, what);
}

}  // namespace oc::format::encodings
