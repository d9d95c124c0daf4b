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
#include <limits>

#include "format/decode.hpp"
#include "format/encodings/integers.hpp"
#include "format/encodings/registry.hpp"
#include "format/proto/listview.pb.h"

namespace oc::format::encodings {
namespace {

constexpr uint64_t kMaxArrowOffset = static_cast<uint64_t>(std::numeric_limits<int32_t>::max());

Result<ColumnPtr> decode_listview(const ArrayView& node, const DTypePtr& t, uint64_t len,
                                  DecodeContext& ctx) {
  OC_TRY(expect_shape(node, 0, 3, 4));
  OC_EXPECT(t->kind == TypeKind::list, corrupt, "vortex.listview for {}", t->to_string());
  OC_ASSIGN_OR_RETURN(auto meta,
                      parse_metadata<pb::ListViewMetadata>(node.metadata, "vortex.listview"));
  OC_ASSIGN_OR_RETURN(PType offset_ptype, integer_ptype(static_cast<uint64_t>(meta.offset_ptype()),
                                                        "listview offset ptype"));
  OC_ASSIGN_OR_RETURN(PType size_ptype, integer_ptype(static_cast<uint64_t>(meta.size_ptype()),
                                                      "listview size ptype"));
  OC_EXPECT(len < std::numeric_limits<uint32_t>::max(), unsupported, "list of {} rows", len);
  OC_ASSIGN_OR_RETURN(auto offsets,
                      decode_unsigned_child(node, 1, offset_ptype, len, ctx, "listview offsets"));
  OC_ASSIGN_OR_RETURN(auto sizes,
                      decode_unsigned_child(node, 2, size_ptype, len, ctx, "listview sizes"));
  const uint64_t elements_len = meta.elements_len();
  bool back_to_back = true;
  for (uint64_t i = 0; i < len; ++i) {
    OC_EXPECT(offsets[i] <= elements_len && sizes[i] <= elements_len - offsets[i], corrupt,
              "listview row {} views [{}, +{}) past {} elements", i, offsets[i], sizes[i],
              elements_len);
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

}  // namespace

void register_listview() { register_encoding("vortex.listview", decode_listview); }

}  // namespace oc::format::encodings
