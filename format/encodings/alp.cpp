// SPDX-License-Identifier: Apache-2.0
// vortex.alp: floats stored as scaled integers (decode formula in format/encodings/alp.hpp).
//
//   dtype:     f32 or f64, nullable or not.
//   metadata:  ALPMetadata { exp_e = 1, exp_f = 2, optional patches = 3 } (format/proto/alp.proto);
//              e and f are at most 10 (f32) or 18 (f64).
//   buffers:   none.
//   children:  0  encoded: i32 (for f32) or i64 (for f64), `len` rows, nullable as the array;
//                 its validity is the array's validity (there is no separate validity child);
//              1.. patches (format/patches.hpp) when metadata.patches is set: indices, values
//                 (the array's own dtype), optional chunk offsets. Patched rows take the patch
//                 value; the encoded integer at those rows is a placeholder.
// A take decodes only its rows of the encoded child, and the patches that fall on them.
#include "format/encodings/alp.hpp"

#include "format/decode.hpp"
#include "format/encodings/integer_access.hpp"
#include "format/encodings/integers.hpp"
#include "format/encodings/registry.hpp"
#include "format/patches.hpp"
#include "format/proto/alp.pb.h"

namespace oc::format::encodings {
namespace {

// Decodes the node's rows @p rows (all @p len of them when null) of @p t, of @p len rows.
template <class Float>
Result<ColumnPtr> decode_typed(const ArrayView& node, const pb::ALPMetadata& meta,
                               const DTypePtr& t, uint64_t len,
                               const std::span<const uint64_t>* rows, DecodeContext& ctx) {
  using Int = typename alp::EncodedInt<Float>::type;
  constexpr PType kIntPType = sizeof(Float) == 4 ? PType::i32 : PType::i64;
  const uint32_t e = meta.exp_e(), f = meta.exp_f();
  OC_EXPECT(e <= alp::kMaxExponent<Float> && f <= alp::kMaxExponent<Float>, corrupt,
            "ALP exponents e={} f={} exceed {} for {}", e, f, alp::kMaxExponent<Float>,
            t->to_string());
  const size_t patch_children = meta.has_patches() ? 2 : 0;
  OC_TRY(expect_shape(node, 0, 1 + patch_children, 1 + patch_children + 1));
  const uint64_t n = rows ? rows->size() : len;
  OC_TRY(ctx.check_alloc(n, sizeof(Float), "ALP values"));

  const DTypePtr encoded_type = DType::make_primitive(kIntPType, t->nullable);
  OC_ASSIGN_OR_RETURN(ColumnPtr encoded,
                      rows ? ctx.decode_take(node.children[0], encoded_type, len, *rows)
                           : ctx.decode(node.children[0], encoded_type, len));
  Buffer values = Buffer::allocate_array_for_overwrite(n, sizeof(Float));
  Float* out = values.mutable_as<Float>();
  const Int* in = encoded->values<Int>();
  const Float f10 = alp::Powers<Float>::kF10[f];
  const Float if10 = alp::Powers<Float>::kIF10[e];
  for (uint64_t i = 0; i < n; ++i) out[i] = alp::decode_value<Float>(in[i], f10, if10);

  auto decoded = std::make_shared<Column>();
  decoded->dtype = t;
  decoded->length = n;
  decoded->buffers.push_back(std::move(values));
  decoded->validity = validity_from_bit0(*encoded);
  decoded->null_count = encoded->null_count;
  if (!meta.has_patches()) return ColumnPtr(std::move(decoded));

  size_t used = 0;
  OC_ASSIGN_OR_RETURN(DecodedPatches patches,
                      decode_patches(node, 1, meta.patches(), t, len, ctx, used));
  OC_EXPECT(node.children.size() == 1 + used, corrupt, "vortex.alp has {} children, expected {}",
            node.children.size(), 1 + used);
  if (rows) {
    OC_ASSIGN_OR_RETURN(patches, patches_at(patches, *rows));
  }
  return apply_patches(decoded, patches);
}

Result<ColumnPtr> decode_or_take(const ArrayView& node, const DTypePtr& t, uint64_t len,
                                 const std::span<const uint64_t>* rows, DecodeContext& ctx) {
  OC_ASSIGN_OR_RETURN(auto meta, parse_metadata<pb::ALPMetadata>(node.metadata, "vortex.alp"));
  OC_EXPECT(t->kind == TypeKind::primitive, corrupt, "vortex.alp for {}", t->to_string());
  switch (t->ptype) {
    case PType::f32:
      return decode_typed<float>(node, meta, t, len, rows, ctx);
    case PType::f64:
      return decode_typed<double>(node, meta, t, len, rows, ctx);
    default:
      return OC_ERROR(Errc::corrupt, "vortex.alp for {}", t->to_string());
  }
}

Result<ColumnPtr> decode_alp(const ArrayView& node, const DTypePtr& t, uint64_t len,
                             DecodeContext& ctx) {
  return decode_or_take(node, t, len, nullptr, ctx);
}

Result<ColumnPtr> take_alp(const ArrayView& node, const DTypePtr& t, uint64_t len,
                           std::span<const uint64_t> rows, DecodeContext& ctx) {
  return decode_or_take(node, t, len, &rows, ctx);
}

}  // namespace

void register_alp() {
  register_encoding("vortex.alp", decode_alp);
  register_take("vortex.alp", take_alp);
}

}  // namespace oc::format::encodings
