// SPDX-License-Identifier: Apache-2.0
// vortex.alprd: ALP for "real doubles", each float's bits split into a dictionary-coded left part
// and verbatim right bits.
//
//   dtype:     f32 or f64, nullable or not.
//   metadata:  ALPRDMetadata { right_bit_width = 1, dict_len = 2, repeated dict = 3,
//              left_parts_ptype = 4, optional patches = 5 } (format/proto/alprd.proto).
//   buffers:   none.
//   children:  0  left parts: `len` codes of left_parts_ptype (always u16), nullable as the
//                 array; its validity is the array's validity;
//              1  right parts: `len` u32 (f32) or u64 (f64), non-nullable;
//              2.. patches (format/patches.hpp) when metadata.patches is set: indices and u16
//                 non-nullable values, the left bit patterns of rows whose left part is not in
//                 the dictionary (their code is a placeholder).
//   Row i has the float bits (left_i << right_bit_width) | right_i, where left_i is
//   dict[code_i] or the row's patch value.
// A take decodes only its rows of both parts, and the patches that fall on them.
#include <algorithm>

#include "format/decode.hpp"
#include "format/encodings/integer_access.hpp"
#include "format/encodings/integers.hpp"
#include "format/encodings/registry.hpp"
#include "format/patches.hpp"
#include "format/proto/alprd.pb.h"

namespace oc::format::encodings {
namespace {

// Decodes the node's rows @p rows (all @p len of them when null) of @p t, of @p len rows.
template <class Bits>
Result<ColumnPtr> decode_typed(const ArrayView& node, const pb::ALPRDMetadata& meta,
                               const DTypePtr& t, uint64_t len,
                               const std::span<const uint64_t>* rows, DecodeContext& ctx) {
  constexpr PType kRightPType = sizeof(Bits) == 4 ? PType::u32 : PType::u64;
  constexpr uint32_t kBits = sizeof(Bits) * 8;
  const uint32_t shift = meta.right_bit_width();
  OC_EXPECT(shift < kBits, corrupt, "ALP-RD right bit width {} for {}", shift, t->to_string());
  OC_EXPECT(meta.dict_len() <= static_cast<uint64_t>(meta.dict_size()), corrupt,
            "ALP-RD dictionary length {} but {} entries", meta.dict_len(), meta.dict_size());
  std::vector<Bits> shifted_dict(meta.dict_len());
  for (uint32_t k = 0; k < meta.dict_len(); ++k) {
    OC_EXPECT(meta.dict(static_cast<int>(k)) <= 0xFFFF, corrupt,
              "ALP-RD dictionary entry {} does not fit 16 bits", meta.dict(static_cast<int>(k)));
    shifted_dict[k] = static_cast<Bits>(static_cast<Bits>(meta.dict(static_cast<int>(k))) << shift);
  }
  OC_ASSIGN_OR_RETURN(PType left_ptype, ptype_from(meta.left_parts_ptype()));
  OC_EXPECT(left_ptype == PType::u16, unsupported, "ALP-RD left parts of type {}",
            ptype_name(left_ptype));
  const size_t patch_children = meta.has_patches() ? 2 : 0;
  OC_TRY(expect_shape(node, 0, 2 + patch_children, 2 + patch_children + 1));
  const uint64_t n = rows ? rows->size() : len;
  OC_TRY(ctx.check_alloc(n, sizeof(Bits), "ALP-RD values"));

  const DTypePtr left_type = DType::make_primitive(PType::u16, t->nullable);
  const DTypePtr right_type = DType::make_primitive(kRightPType, false);
  OC_ASSIGN_OR_RETURN(ColumnPtr left, rows
                                          ? ctx.decode_take(node.children[0], left_type, len, *rows)
                                          : ctx.decode(node.children[0], left_type, len));
  OC_ASSIGN_OR_RETURN(ColumnPtr right,
                      rows ? ctx.decode_take(node.children[1], right_type, len, *rows)
                           : ctx.decode(node.children[1], right_type, len));
  Buffer values = Buffer::allocate_array_for_overwrite(n, sizeof(Bits));
  Bits* out = values.mutable_as<Bits>();
  const uint16_t* codes = left->values<uint16_t>();
  const Bits* rights = right->values<Bits>();
  std::vector<uint64_t> unmapped;  // rows whose code lies outside the dictionary
  for (uint64_t i = 0; i < n; ++i) {
    Bits left_bits = 0;
    if (codes[i] < shifted_dict.size()) {
      left_bits = shifted_dict[codes[i]];
    } else {
      unmapped.push_back(i);
    }
    out[i] = left_bits | rights[i];
  }

  std::vector<uint64_t> patched;
  if (meta.has_patches()) {
    size_t used = 0;
    OC_ASSIGN_OR_RETURN(
        DecodedPatches patches,
        decode_patches(node, 2, meta.patches(), left_type->with_nullable(false), len, ctx, used));
    OC_EXPECT(node.children.size() == 2 + used, corrupt,
              "vortex.alprd has {} children, expected {}", node.children.size(), 2 + used);
    if (rows) {
      OC_ASSIGN_OR_RETURN(patches, patches_at(patches, *rows));
    }
    const uint16_t* lefts = patches.values->values<uint16_t>();
    for (size_t k = 0; k < patches.positions.size(); ++k) {
      const uint64_t row = patches.positions[k];
      out[row] = static_cast<Bits>(static_cast<Bits>(lefts[k]) << shift) | rights[row];
    }
    patched = std::move(patches.positions);
  }
  // A code outside the dictionary is harmless only where a patch or a null covers the row.
  for (uint64_t row : unmapped) {
    OC_EXPECT(!left->is_valid(row) || std::binary_search(patched.begin(), patched.end(), row),
              corrupt, "ALP-RD code {} at row {} outside a dictionary of {}", codes[row], row,
              shifted_dict.size());
  }

  auto c = std::make_shared<Column>();
  c->dtype = t;
  c->length = n;
  c->buffers.push_back(std::move(values));
  c->validity = validity_from_bit0(*left);
  c->null_count = left->null_count;
  return ColumnPtr(std::move(c));
}

Result<ColumnPtr> decode_or_take(const ArrayView& node, const DTypePtr& t, uint64_t len,
                                 const std::span<const uint64_t>* rows, DecodeContext& ctx) {
  OC_ASSIGN_OR_RETURN(auto meta, parse_metadata<pb::ALPRDMetadata>(node.metadata, "vortex.alprd"));
  OC_EXPECT(t->kind == TypeKind::primitive, corrupt, "vortex.alprd for {}", t->to_string());
  switch (t->ptype) {
    case PType::f32:
      return decode_typed<uint32_t>(node, meta, t, len, rows, ctx);
    case PType::f64:
      return decode_typed<uint64_t>(node, meta, t, len, rows, ctx);
    default:
      return OC_ERROR(Errc::corrupt, "vortex.alprd for {}", t->to_string());
  }
}

Result<ColumnPtr> decode_alprd(const ArrayView& node, const DTypePtr& t, uint64_t len,
                               DecodeContext& ctx) {
  return decode_or_take(node, t, len, nullptr, ctx);
}

Result<ColumnPtr> take_alprd(const ArrayView& node, const DTypePtr& t, uint64_t len,
                             std::span<const uint64_t> rows, DecodeContext& ctx) {
  return decode_or_take(node, t, len, &rows, ctx);
}

}  // namespace

void register_alprd() {
  register_encoding("vortex.alprd", decode_alprd);
  register_take("vortex.alprd", take_alprd);
}

}  // namespace oc::format::encodings
