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
  const size_t width = ptype_width(t.ptype);
  const uint8_t* base = c.buffers[0].data() + c.offset * width;
  for (uint64_t i = 0; i < c.length; ++i) {
    if (!c.is_valid(i)) continue;
    const uint8_t* p = base + i * width;
    int64_t v = 0;
    switch (t.ptype) {
      case PType::u8:
        out[i] = *p;
        continue;
      case PType::u16:
        out[i] = load_le<uint16_t>(p);
        continue;
      case PType::u32:
        out[i] = load_le<uint32_t>(p);
        continue;
      case PType::u64:
        out[i] = load_le<uint64_t>(p);
        continue;
      case PType::i8:
        v = static_cast<int8_t>(*p);
        break;
      case PType::i16:
        v = load_le<int16_t>(p);
        break;
      case PType::i32:
        v = load_le<int32_t>(p);
        break;
      default:
        v = load_le<int64_t>(p);
        break;
    }
    OC_EXPECT(v >= 0, corrupt, "{} holds negative value {} at row {}", what, v, i);
    out[i] = static_cast<uint64_t>(v);
  }
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
