// SPDX-License-Identifier: Apache-2.0
// vortex.fixed_size_list: lists of exactly `list_size` elements (from the dtype).
//
// - buffers:  none.
// - metadata: empty in 0.76 writers; 0.93 writers describe a `degenerate_len` field that they
//             leave at its default (nothing serialized). The length comes from the parent
//             either way, so the metadata is not read.
// - children: [elements (the element dtype, len x list_size rows), validity (optional)].
// This is already Arrow's fixed-size list layout.
#include <limits>

#include "format/decode.hpp"
#include "format/encodings/registry.hpp"

namespace oc::format::encodings {
namespace {

Result<ColumnPtr> decode_fixed_size_list(const ArrayView& node, const DTypePtr& t, uint64_t len,
                                         DecodeContext& ctx) {
  OC_TRY(expect_shape(node, 0, 1, 2));
  OC_EXPECT(t->kind == TypeKind::fixed_size_list, corrupt, "vortex.fixed_size_list for {}",
            t->to_string());
  const uint64_t size = t->list_size;
  const auto elements_len = checked_mul(len, size);
  OC_EXPECT(elements_len.has_value(), corrupt, "fixed-size list of {} x {} elements overflows", len,
            size);
  OC_ASSIGN_OR_RETURN(auto elements, ctx.decode(node.children[0], t->children[0], *elements_len));
  auto c = std::make_shared<Column>();
  c->dtype = t;
  c->length = len;
  c->children.push_back(std::move(elements));
  int64_t nulls = 0;
  OC_ASSIGN_OR_RETURN(c->validity, decode_validity(node, 1, t->nullable, len, ctx, nulls));
  c->null_count = nulls;
  return ColumnPtr(std::move(c));
}

}  // namespace

void register_fixed_size_list() {
  register_encoding("vortex.fixed_size_list", decode_fixed_size_list);
}

}  // namespace oc::format::encodings
