// SPDX-License-Identifier: Apache-2.0
// vortex.list: variable-length lists as offsets into one elements array.
//
// - buffers:  none.
// - metadata: `ListMetadata { uint64 elements_len = 1; PType offset_ptype = 2 }`.
// - children: [elements (the list's element dtype, elements_len rows),
//              offsets (non-nullable integers of offset_ptype, len + 1 rows, non-decreasing),
//              validity (optional, len rows)].
// List i holds elements [offsets[i], offsets[i + 1]). Offsets need not start at 0. The Arrow
// form re-bases them to 0 as i32 and slices the elements to the range they cover.
#include <limits>
#include <utility>
#include <vector>

#include "format/decode.hpp"
#include "format/encodings/integers.hpp"
#include "format/encodings/registry.hpp"
#include "format/proto/list.pb.h"

namespace oc::format::encodings {
namespace {

Result<ColumnPtr> decode_list(const ArrayView& node, const DTypePtr& t, uint64_t len,
                              DecodeContext& ctx) {
  OC_TRY(expect_shape(node, 0, 2, 3));
  OC_EXPECT(t->kind == TypeKind::list, corrupt, "vortex.list for {}", t->to_string());
  OC_ASSIGN_OR_RETURN(auto meta, parse_metadata<pb::ListMetadata>(node.metadata, "vortex.list"));
  OC_ASSIGN_OR_RETURN(PType offset_ptype, integer_ptype(static_cast<uint64_t>(meta.offset_ptype()),
                                                        "list offset ptype"));
  OC_EXPECT(len < std::numeric_limits<uint32_t>::max(), unsupported, "list of {} rows", len);
  OC_ASSIGN_OR_RETURN(auto offsets,
                      decode_unsigned_child(node, 1, offset_ptype, len + 1, ctx, "list offsets"));
  for (uint64_t i = 0; i < len; ++i) {
    OC_EXPECT(offsets[i] <= offsets[i + 1], corrupt, "list offsets decrease at row {}: {} > {}", i,
              offsets[i], offsets[i + 1]);
  }
  const uint64_t first = offsets[0];
  const uint64_t last = offsets[len];
  OC_EXPECT(last <= meta.elements_len(), corrupt, "list offset {} past {} elements", last,
            meta.elements_len());
  OC_EXPECT(last - first <= static_cast<uint64_t>(std::numeric_limits<int32_t>::max()), unsupported,
            "list of {} elements needs 64-bit offsets", last - first);

  OC_ASSIGN_OR_RETURN(auto elements,
                      ctx.decode(node.children[0], t->children[0], meta.elements_len()));

  auto c = std::make_shared<Column>();
  c->dtype = t;
  c->length = len;
  Buffer arrow_offsets = Buffer::allocate_array(saturating_add(len, 1), sizeof(int32_t));
  int32_t* out = arrow_offsets.mutable_as<int32_t>();
  for (uint64_t i = 0; i <= len; ++i) out[i] = static_cast<int32_t>(offsets[i] - first);
  c->buffers.push_back(std::move(arrow_offsets));
  c->children.push_back(slice(elements, first, last - first));
  int64_t nulls = 0;
  OC_ASSIGN_OR_RETURN(c->validity, decode_validity(node, 2, t->nullable, len, ctx, nulls));
  c->null_count = nulls;
  return ColumnPtr(std::move(c));
}

// A take reads the offsets at each taken row and the row after it, then only the elements those
// rows hold: a few token lists taken from a chunk of millions of elements read a few blocks of
// it, not the chunk (a take from a store reads just those bytes: format/partial_segment.hpp).
Result<ColumnPtr> take_list(const ArrayView& node, const DTypePtr& t, uint64_t len,
                            std::span<const uint64_t> rows, DecodeContext& ctx) {
  OC_TRY(expect_shape(node, 0, 2, 3));
  OC_EXPECT(t->kind == TypeKind::list, corrupt, "vortex.list for {}", t->to_string());
  OC_ASSIGN_OR_RETURN(auto meta, parse_metadata<pb::ListMetadata>(node.metadata, "vortex.list"));
  OC_ASSIGN_OR_RETURN(PType offset_ptype, integer_ptype(static_cast<uint64_t>(meta.offset_ptype()),
                                                        "list offset ptype"));
  OC_EXPECT(len < std::numeric_limits<uint32_t>::max(), unsupported, "list of {} rows", len);
  // Offsets rows r and r + 1 of every taken row r: sorted and unique, as rows are.
  std::vector<uint64_t> at;
  OC_TRY(ctx.check_alloc(rows.size(), 2 * sizeof(uint64_t), "list offsets taken"));
  at.reserve(2 * rows.size());
  for (uint64_t r : rows) {
    if (at.empty() || at.back() != r) at.push_back(r);
    at.push_back(r + 1);
  }
  OC_ASSIGN_OR_RETURN(
      ColumnPtr offsets_col,
      ctx.decode_take(node.children[1], DType::make_primitive(offset_ptype, false), len + 1, at));
  OC_ASSIGN_OR_RETURN(auto offsets, unsigned_rows(*offsets_col, "list offsets"));
  // Each row's range of elements, checked, and the Arrow offsets of the result.
  std::vector<std::pair<uint64_t, uint64_t>> spans(rows.size());
  Buffer arrow_offsets = Buffer::allocate_array(saturating_add(rows.size(), 1), sizeof(int32_t));
  int32_t* out = arrow_offsets.mutable_as<int32_t>();
  out[0] = 0;
  uint64_t total = 0, previous_end = 0;
  for (size_t i = 0, k = 0; i < rows.size(); ++i) {
    while (at[k] != rows[i]) ++k;  // at holds rows[i], then rows[i] + 1
    const uint64_t b = offsets[k], e = offsets[k + 1];
    OC_EXPECT(b <= e && b >= previous_end, corrupt, "list offsets decrease at row {}: {} > {}",
              rows[i], b > e ? b : previous_end, b > e ? e : b);
    OC_EXPECT(e <= meta.elements_len(), corrupt, "list offset {} past {} elements", e,
              meta.elements_len());
    total += e - b;
    OC_EXPECT(total <= static_cast<uint64_t>(std::numeric_limits<int32_t>::max()), unsupported,
              "list of {} elements needs 64-bit offsets", total);
    spans[i] = {b, e};
    previous_end = e;
    out[i + 1] = static_cast<int32_t>(total);
  }
  OC_TRY(ctx.check_alloc(total, sizeof(uint64_t), "list elements taken"));
  std::vector<uint64_t> elements_at;
  elements_at.reserve(total);
  for (const auto& [b, e] : spans) {
    for (uint64_t j = b; j < e; ++j) elements_at.push_back(j);
  }
  OC_ASSIGN_OR_RETURN(auto elements, ctx.decode_take(node.children[0], t->children[0],
                                                     meta.elements_len(), elements_at));
  auto c = std::make_shared<Column>();
  c->dtype = t;
  c->length = rows.size();
  c->buffers.push_back(std::move(arrow_offsets));
  c->children.push_back(std::move(elements));
  int64_t nulls = 0;
  OC_ASSIGN_OR_RETURN(c->validity, take_validity(node, 2, t->nullable, len, rows, ctx, nulls));
  c->null_count = nulls;
  return ColumnPtr(std::move(c));
}

}  // namespace

void register_list() {
  register_encoding("vortex.list", decode_list);
  register_take("vortex.list", take_list);
}

}  // namespace oc::format::encodings
