// SPDX-License-Identifier: Apache-2.0
// The canonical Vortex encodings, whose buffers already are Arrow buffers:
//
// - vortex.null:      no buffers, no children.
// - vortex.bool:      buffer 0 = values bitmap (LSB first); metadata `BoolMetadata { uint32
//                     offset = 1 }` is the bit offset of element 0 in the buffer (< 8);
//                     child 0 (optional) = validity.
// - vortex.primitive: buffer 0 = len x width little-endian values; empty metadata;
//                     child 0 (optional) = validity.
// - vortex.struct:    no buffers; children = [validity if the struct dtype is nullable and the
//                     array is not all-valid] then one child per field, each of the struct's
//                     length.
//
// Takes of bool and primitive gather straight from the buffer, reading only the taken rows'
// bytes; struct takes each field.
#include "format/decode.hpp"
#include "format/encodings/registry.hpp"
#include "format/proto/canonical.pb.h"

namespace oc::format::encodings {
namespace {

Result<ColumnPtr> decode_null(const ArrayView& node, const DTypePtr& t, uint64_t len,
                              DecodeContext&) {
  OC_TRY(expect_shape(node, 0, 0, 0));
  OC_EXPECT(t->kind == TypeKind::null, corrupt, "vortex.null for {}", t->to_string());
  return make_all_null(t, len);
}

// Gathers @p rows of @p values (no validity) and adds the node's validity child for them.
Result<ColumnPtr> gather_with_validity(const ArrayView& node, const ColumnPtr& values,
                                       const DTypePtr& t, uint64_t len,
                                       std::span<const uint64_t> rows, DecodeContext& ctx) {
  OC_ASSIGN_OR_RETURN(ColumnPtr out, take(values, rows));
  int64_t nulls = 0;
  OC_ASSIGN_OR_RETURN(Buffer validity, take_validity(node, 0, t->nullable, len, rows, ctx, nulls));
  if (validity.empty()) return out;
  return with_validity(out, std::move(validity), t);
}

// The values bitmap of a vortex.bool node, checked, as a column with no validity.
Result<ColumnPtr> bool_values(const ArrayView& node, const DTypePtr& t, uint64_t len) {
  OC_TRY(expect_shape(node, 1, 0, 1));
  OC_EXPECT(t->kind == TypeKind::boolean, corrupt, "vortex.bool for {}", t->to_string());
  OC_ASSIGN_OR_RETURN(auto meta, parse_metadata<pb::BoolMetadata>(node.metadata, "vortex.bool"));
  OC_EXPECT(meta.offset() < 8, corrupt, "bool bit offset {} >= 8", meta.offset());
  const Buffer& bits = node.buffers[0];
  OC_EXPECT(saturating_add(meta.offset(), len) <= saturating_mul(bits.size(), 8), corrupt,
            "bool buffer of {} bytes holds fewer than {} bits", bits.size(), meta.offset() + len);
  auto c = std::make_shared<Column>();
  c->dtype = t;
  c->length = len;
  c->offset = meta.offset();
  c->buffers.push_back(bits);
  return ColumnPtr(std::move(c));
}

Result<ColumnPtr> decode_bool(const ArrayView& node, const DTypePtr& t, uint64_t len,
                              DecodeContext& ctx) {
  OC_ASSIGN_OR_RETURN(ColumnPtr c, bool_values(node, t, len));
  int64_t nulls = 0;
  OC_ASSIGN_OR_RETURN(Buffer validity, decode_validity(node, 0, t->nullable, len, ctx, nulls));
  if (validity.empty()) return c;
  return with_validity(c, std::move(validity), t);
}

Result<ColumnPtr> take_bool(const ArrayView& node, const DTypePtr& t, uint64_t len,
                            std::span<const uint64_t> rows, DecodeContext& ctx) {
  OC_ASSIGN_OR_RETURN(ColumnPtr c, bool_values(node, t, len));
  for (uint64_t r : rows) ctx.need(node.buffers[0], (c->offset + r) / 8, 1);
  return gather_with_validity(node, c, t, len, rows, ctx);
}

Result<ColumnPtr> decode_primitive(const ArrayView& node, const DTypePtr& t, uint64_t len,
                                   DecodeContext& ctx) {
  OC_TRY(expect_shape(node, 1, 0, 1));
  const DType& st = t->storage();
  OC_EXPECT(st.kind == TypeKind::primitive, corrupt, "vortex.primitive for {}", t->to_string());
  const size_t w = ptype_width(st.ptype);
  OC_EXPECT(holds_exactly(node.buffers[0].size(), len, w), corrupt,
            "primitive buffer is {} bytes, expected {} x {}", node.buffers[0].size(), len, w);
  // A slice decode takes just the window's bytes, without a copy.
  const RowWindow rows = ctx.window().value_or(RowWindow{0, len});
  auto c = std::make_shared<Column>();
  c->dtype = t;
  c->length = rows.size();
  c->buffers.push_back(node.buffers[0].slice(rows.begin * w, rows.size() * w));
  // Values of unaligned segments (older writers) are copied so typed access stays aligned.
  if (reinterpret_cast<uintptr_t>(node.buffers[0].data()) % w != 0) {
    c->buffers[0] = Buffer::copy_of(c->buffers[0].span());
  }
  int64_t nulls = 0;
  OC_ASSIGN_OR_RETURN(c->validity, decode_validity(node, 0, st.nullable, len, ctx, nulls));
  c->null_count = nulls;
  return ColumnPtr(std::move(c));
}

Result<ColumnPtr> take_primitive(const ArrayView& node, const DTypePtr& t, uint64_t len,
                                 std::span<const uint64_t> rows, DecodeContext& ctx) {
  OC_TRY(expect_shape(node, 1, 0, 1));
  const DType& st = t->storage();
  OC_EXPECT(st.kind == TypeKind::primitive, corrupt, "vortex.primitive for {}", t->to_string());
  const size_t w = ptype_width(st.ptype);
  OC_EXPECT(holds_exactly(node.buffers[0].size(), len, w), corrupt,
            "primitive buffer is {} bytes, expected {} x {}", node.buffers[0].size(), len, w);
  for (uint64_t r : rows) ctx.need(node.buffers[0], r * w, w);
  // `take` copies bytewise, so an unaligned buffer needs no aligned copy here.
  auto values = std::make_shared<Column>();
  values->dtype = t;
  values->length = len;
  values->buffers.push_back(node.buffers[0]);
  return gather_with_validity(node, values, t, len, rows, ctx);
}

Result<ColumnPtr> decode_struct(const ArrayView& node, const DTypePtr& t, uint64_t len,
                                DecodeContext& ctx) {
  OC_EXPECT(t->kind == TypeKind::struct_, corrupt, "vortex.struct for {}", t->to_string());
  const size_t nfields = t->children.size();
  OC_TRY(expect_shape(node, 0, nfields, nfields + 1));
  const size_t first = node.children.size() - nfields;  // 1 when a validity child leads
  auto c = std::make_shared<Column>();
  c->dtype = t;
  c->length = len;
  for (size_t f = 0; f < nfields; ++f) {
    OC_ASSIGN_OR_RETURN(auto child, ctx.decode(node.children[first + f], t->children[f], len));
    c->children.push_back(std::move(child));
  }
  if (first == 1) {
    int64_t nulls = 0;
    OC_ASSIGN_OR_RETURN(c->validity, decode_validity(node, 0, t->nullable, len, ctx, nulls));
    c->null_count = nulls;
  }
  return ColumnPtr(std::move(c));
}

Result<ColumnPtr> take_struct(const ArrayView& node, const DTypePtr& t, uint64_t len,
                              std::span<const uint64_t> rows, DecodeContext& ctx) {
  OC_EXPECT(t->kind == TypeKind::struct_, corrupt, "vortex.struct for {}", t->to_string());
  const size_t nfields = t->children.size();
  OC_TRY(expect_shape(node, 0, nfields, nfields + 1));
  const size_t first = node.children.size() - nfields;
  auto c = std::make_shared<Column>();
  c->dtype = t;
  c->length = rows.size();
  for (size_t f = 0; f < nfields; ++f) {
    OC_ASSIGN_OR_RETURN(auto child,
                        ctx.decode_take(node.children[first + f], t->children[f], len, rows));
    c->children.push_back(std::move(child));
  }
  if (first == 1) {
    int64_t nulls = 0;
    OC_ASSIGN_OR_RETURN(c->validity, take_validity(node, 0, t->nullable, len, rows, ctx, nulls));
    c->null_count = nulls;
  }
  return ColumnPtr(std::move(c));
}

}  // namespace

void register_canonical() {
  register_encoding("vortex.null", decode_null);
  register_encoding("vortex.bool", decode_bool);
  register_encoding("vortex.primitive", decode_primitive, /*window_aware=*/true);
  register_encoding("vortex.struct", decode_struct);
  register_take("vortex.bool", take_bool);
  register_take("vortex.primitive", take_primitive);
  register_take("vortex.struct", take_struct);
}

}  // namespace oc::format::encodings
