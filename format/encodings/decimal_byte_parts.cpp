// SPDX-License-Identifier: Apache-2.0
// vortex.decimal_byte_parts: decimals whose integer values are split into byte parts, each
// stored (and compressed) as an ordinary integer array. The default compressor emits it for
// every decimal column.
//
// - buffers:  none.
// - metadata: `DecimalBytePartsMetadata { PType zeroth_child_ptype = 1;
//              uint32 lower_part_count = 2 }`.
// - children: [most significant part: signed integers (i8..i64) of zeroth_child_ptype with the
//              decimal's nullability, len rows; it carries the validity],
//              then lower_part_count lower parts.
// Writers (0.76 through 0.93) only ever write lower_part_count = 0, so the decimal's value is
// the most significant part itself, sign-extended to Arrow's i128 or i256. Lower parts are
// rejected as unsupported: their layout is not specified anywhere yet.
#include "format/decode.hpp"
#include "format/encodings/decimal.hpp"
#include "format/encodings/integer_access.hpp"
#include "format/encodings/integers.hpp"
#include "format/encodings/registry.hpp"
#include "format/proto/decimal_byte_parts.pb.h"

namespace oc::format::encodings {
namespace {

// Checks the node and returns the ptype of its most significant part.
Result<PType> msp_ptype_of(const ArrayView& node, const DTypePtr& t) {
  OC_EXPECT(t->kind == TypeKind::decimal, corrupt, "vortex.decimal_byte_parts for {}",
            t->to_string());
  OC_ASSIGN_OR_RETURN(auto meta, parse_metadata<pb::DecimalBytePartsMetadata>(
                                     node.metadata, "vortex.decimal_byte_parts"));
  OC_EXPECT(meta.lower_part_count() == 0, unsupported,
            "vortex.decimal_byte_parts with {} lower parts", meta.lower_part_count());
  OC_TRY(expect_shape(node, 0, 1, 1));
  OC_ASSIGN_OR_RETURN(
      PType msp_ptype,
      integer_ptype(static_cast<uint64_t>(meta.zeroth_child_ptype()), "decimal part"));
  OC_EXPECT(ptype_is_signed(msp_ptype), corrupt, "decimal part ptype {} is not signed",
            ptype_name(msp_ptype));
  return msp_ptype;
}

// The decimals whose values are the decoded most significant part @p msp (whatever rows it
// holds: all, a window or taken rows), sign-extended to Arrow's width.
Result<ColumnPtr> widen(const ColumnPtr& msp, const DTypePtr& t, DecodeContext& ctx) {
  const uint64_t len = msp->length;
  const size_t out_width = decimal_arrow_width(t->precision);
  OC_TRY(ctx.check_alloc(len, out_width, "decimal values"));
  const size_t width = ptype_width(msp->dtype->storage().ptype);
  OC_ASSIGN_OR_RETURN(
      Buffer values,
      resize_decimal_values(msp->buffers[0].data() + msp->offset * width, width, len, out_width));
  auto c = std::make_shared<Column>();
  c->dtype = t;
  c->length = len;
  c->buffers.push_back(std::move(values));
  c->validity = validity_from_bit0(*msp);
  c->null_count = c->validity.empty() ? 0 : msp->null_count;
  return ColumnPtr(std::move(c));
}

// Window-aware: the part decodes only the window's rows, and only those are widened.
Result<ColumnPtr> decode_decimal_byte_parts(const ArrayView& node, const DTypePtr& t, uint64_t len,
                                            DecodeContext& ctx) {
  OC_ASSIGN_OR_RETURN(PType p, msp_ptype_of(node, t));
  OC_ASSIGN_OR_RETURN(auto msp,
                      ctx.decode(node.children[0], DType::make_primitive(p, t->nullable), len));
  return widen(msp, t, ctx);
}

Result<ColumnPtr> take_decimal_byte_parts(const ArrayView& node, const DTypePtr& t, uint64_t len,
                                          std::span<const uint64_t> rows, DecodeContext& ctx) {
  OC_ASSIGN_OR_RETURN(PType p, msp_ptype_of(node, t));
  OC_ASSIGN_OR_RETURN(auto msp, ctx.decode_take(node.children[0],
                                                DType::make_primitive(p, t->nullable), len, rows));
  return widen(msp, t, ctx);
}

}  // namespace

void register_decimal_byte_parts() {
  register_encoding("vortex.decimal_byte_parts", decode_decimal_byte_parts, /*window_aware=*/true);
  register_take("vortex.decimal_byte_parts", take_decimal_byte_parts);
}

}  // namespace oc::format::encodings
