// SPDX-License-Identifier: Apache-2.0
// vortex.listview: lists as (offset, size) views into one elements array; Vortex's canonical
// list form.
//
// - buffers:  none.
// - metadata: `ListViewMetadata { uint64 elements_len = 1; PType offset_ptype = 2;
//              PType size_ptype = 3 }`.
// - children: [elements (the list's element dtype, elements_len rows),
//              offsets (non-nullable integers of offset_ptype, len rows),
//              sizes (non-nullable integers of size_ptype, len rows),
//              validity (optional, len rows)].
// List i holds elements [offsets[i], offsets[i] + sizes[i]). Views may overlap, leave gaps or
// come in any order; every view, null or not, must lie inside the elements.
//
// Arrow lists need back-to-back ranges. When the views already are (each starts where the
// previous ends), the offsets are rebuilt and the elements sliced; otherwise the elements are
// gathered in row order, null rows becoming empty lists.
//
// A take reads the offset and size of each taken row, then only the elements their views hold
// (vortex.list's take does the same with its offsets: format/encodings/list.cpp).
#include <algorithm>
#include <functional>
#include <limits>
#include <vector>

#include "format/decode.hpp"
#include "format/encodings/integers.hpp"
#include "format/encodings/registry.hpp"
#include "format/proto/listview.pb.h"

namespace oc::format::encodings {
namespace {

constexpr uint64_t kMaxArrowOffset = static_cast<uint64_t>(std::numeric_limits<int32_t>::max());

// The checked shape and metadata of a vortex.listview node of type @p t and @p len rows.
struct ListViewNode {
  uint64_t elements_len = 0;
  PType offset_ptype{}, size_ptype{};
};

Result<ListViewNode> parse_listview(const ArrayView& node, const DTypePtr& t, uint64_t len) {
  OC_TRY(expect_shape(node, 0, 3, 4));
  OC_EXPECT(t->kind == TypeKind::list, corrupt, "vortex.listview for {}", t->to_string());
  OC_ASSIGN_OR_RETURN(auto meta,
                      parse_metadata<pb::ListViewMetadata>(node.metadata, "vortex.listview"));
  ListViewNode out;
  out.elements_len = meta.elements_len();
  OC_ASSIGN_OR_RETURN(out.offset_ptype, integer_ptype(static_cast<uint64_t>(meta.offset_ptype()),
                                                      "listview offset ptype"));
  OC_ASSIGN_OR_RETURN(out.size_ptype, integer_ptype(static_cast<uint64_t>(meta.size_ptype()),
                                                    "listview size ptype"));
  OC_EXPECT(len < std::numeric_limits<uint32_t>::max(), unsupported, "list of {} rows", len);
  return out;
}

// Every view, null or not, must lie inside the elements, as upstream validates them all.
Result<void> check_view(uint64_t row, uint64_t offset, uint64_t size, uint64_t elements_len) {
  OC_EXPECT(offset <= elements_len && size <= elements_len - offset, corrupt,
            "listview row {} views [{}, +{}) past {} elements", row, offset, size, elements_len);
  return {};
}

Result<ColumnPtr> decode_listview(const ArrayView& node, const DTypePtr& t, uint64_t len,
                                  DecodeContext& ctx) {
  OC_ASSIGN_OR_RETURN(const ListViewNode lv, parse_listview(node, t, len));
  OC_ASSIGN_OR_RETURN(
      auto offsets, decode_unsigned_child(node, 1, lv.offset_ptype, len, ctx, "listview offsets"));
  OC_ASSIGN_OR_RETURN(auto sizes,
                      decode_unsigned_child(node, 2, lv.size_ptype, len, ctx, "listview sizes"));
  const uint64_t elements_len = lv.elements_len;
  bool back_to_back = true;
  for (uint64_t i = 0; i < len; ++i) {
    OC_TRY(check_view(i, offsets[i], sizes[i], elements_len));
    if (i > 0 && offsets[i] != offsets[i - 1] + sizes[i - 1]) back_to_back = false;
  }

  int64_t nulls = 0;
  OC_ASSIGN_OR_RETURN(Buffer validity, decode_validity(node, 3, t->nullable, len, ctx, nulls));
  OC_ASSIGN_OR_RETURN(auto elements, ctx.decode(node.children[0], t->children[0], elements_len));

  auto c = std::make_shared<Column>();
  c->dtype = t;
  c->length = len;
  c->validity = std::move(validity);
  c->null_count = nulls;
  Buffer arrow_offsets = Buffer::allocate_array(saturating_add(len, 1), sizeof(int32_t));
  int32_t* out = arrow_offsets.mutable_as<int32_t>();
  if (back_to_back) {
    const uint64_t first = len == 0 ? 0 : offsets[0];
    const uint64_t total = len == 0 ? 0 : offsets[len - 1] + sizes[len - 1] - first;
    OC_EXPECT(total <= kMaxArrowOffset, unsupported, "list of {} elements needs 64-bit offsets",
              total);
    for (uint64_t i = 0; i < len; ++i) out[i] = static_cast<int32_t>(offsets[i] - first);
    out[len] = static_cast<int32_t>(total);
    c->children.push_back(slice(elements, first, total));
  } else {
    uint64_t total = 0;
    for (uint64_t i = 0; i < len; ++i) {
      if (c->is_valid(i)) total = saturating_add(total, sizes[i]);
      OC_EXPECT(total <= kMaxArrowOffset, unsupported, "list of {} elements needs 64-bit offsets",
                total);
    }
    OC_TRY(ctx.check_alloc(total, 8, "listview gather"));
    std::vector<uint64_t> gather;
    gather.reserve(total);
    for (uint64_t i = 0; i < len; ++i) {
      out[i] = static_cast<int32_t>(gather.size());
      if (!c->is_valid(i)) continue;
      for (uint64_t k = 0; k < sizes[i]; ++k) gather.push_back(offsets[i] + k);
    }
    out[len] = static_cast<int32_t>(gather.size());
    OC_ASSIGN_OR_RETURN(auto gathered, take(elements, gather));
    c->children.push_back(std::move(gathered));
  }
  c->buffers.push_back(std::move(arrow_offsets));
  return ColumnPtr(std::move(c));
}

// Rows @p rows of a listview: their offsets and sizes, then only the elements their views hold,
// decoded once each and in order even where views overlap or run backwards. Null rows become
// empty lists (their views are still checked).
Result<ColumnPtr> take_listview(const ArrayView& node, const DTypePtr& t, uint64_t len,
                                std::span<const uint64_t> rows, DecodeContext& ctx) {
  OC_ASSIGN_OR_RETURN(const ListViewNode lv, parse_listview(node, t, len));
  OC_TRY(ctx.check_alloc(rows.size(), 2 * sizeof(uint64_t), "listview views taken"));
  OC_ASSIGN_OR_RETURN(
      ColumnPtr offsets_col,
      ctx.decode_take(node.children[1], DType::make_primitive(lv.offset_ptype, false), len, rows));
  OC_ASSIGN_OR_RETURN(auto offsets, unsigned_rows(*offsets_col, "listview offsets"));
  OC_ASSIGN_OR_RETURN(
      ColumnPtr sizes_col,
      ctx.decode_take(node.children[2], DType::make_primitive(lv.size_ptype, false), len, rows));
  OC_ASSIGN_OR_RETURN(auto sizes, unsigned_rows(*sizes_col, "listview sizes"));
  int64_t nulls = 0;
  OC_ASSIGN_OR_RETURN(Buffer validity, take_validity(node, 3, t->nullable, len, rows, ctx, nulls));
  const uint8_t* valid = validity.empty() ? nullptr : validity.data();

  Buffer arrow_offsets = Buffer::allocate_array(saturating_add(rows.size(), 1), sizeof(int32_t));
  int32_t* out = arrow_offsets.mutable_as<int32_t>();
  uint64_t total = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    OC_TRY(check_view(rows[i], offsets[i], sizes[i], lv.elements_len));
    out[i] = static_cast<int32_t>(total);
    if (valid != nullptr && !bitmap_get(valid, i)) sizes[i] = 0;
    total = saturating_add(total, sizes[i]);  // a size may be near 2^64: no wrap
    OC_EXPECT(total <= kMaxArrowOffset, unsupported, "list of {} elements needs 64-bit offsets",
              total);
  }
  out[rows.size()] = static_cast<int32_t>(total);
  OC_TRY(ctx.check_alloc(total, 2 * sizeof(uint64_t), "listview elements taken"));
  std::vector<uint64_t> wanted;  // the elements in row order
  wanted.reserve(total);
  for (size_t i = 0; i < rows.size(); ++i) {
    for (uint64_t k = 0; k < sizes[i]; ++k) wanted.push_back(offsets[i] + k);
  }
  ColumnPtr elements;
  if (std::adjacent_find(wanted.begin(), wanted.end(), std::greater_equal<>()) == wanted.end()) {
    // Views that follow one another (what writers produce): the elements as they come.
    OC_ASSIGN_OR_RETURN(elements,
                        ctx.decode_take(node.children[0], t->children[0], lv.elements_len, wanted));
  } else {
    std::vector<uint64_t> unique = wanted;
    std::sort(unique.begin(), unique.end());
    unique.erase(std::unique(unique.begin(), unique.end()), unique.end());
    OC_ASSIGN_OR_RETURN(ColumnPtr decoded,
                        ctx.decode_take(node.children[0], t->children[0], lv.elements_len, unique));
    for (auto& w : wanted) {
      w = static_cast<uint64_t>(std::lower_bound(unique.begin(), unique.end(), w) - unique.begin());
    }
    OC_ASSIGN_OR_RETURN(elements, take(decoded, wanted));
  }
  auto c = std::make_shared<Column>();
  c->dtype = t;
  c->length = rows.size();
  c->validity = std::move(validity);
  c->null_count = nulls;
  c->buffers.push_back(std::move(arrow_offsets));
  c->children.push_back(std::move(elements));
  return ColumnPtr(std::move(c));
}

}  // namespace

void register_listview() {
  register_encoding("vortex.listview", decode_listview);
  register_take("vortex.listview", take_listview);
}

}  // namespace oc::format::encodings
