// SPDX-License-Identifier: Apache-2.0
// vortex.masked: a non-nullable child plus a validity mask.
//   children: [child (the values, with the non-nullable form of the dtype), validity (optional)].
//   The dtype is always nullable: vortex-data builds a masked array only from a nullable
//   validity and refuses a non-nullable one ("MaskedArray must have nullable validity").
//   The compressor emits masked(constant) for constant columns that contain nulls.
#include "format/decode.hpp"
#include "format/encodings/registry.hpp"

namespace oc::format::encodings {
namespace {

Result<ColumnPtr> decode_masked(const ArrayView& node, const DTypePtr& t, uint64_t len,
                                DecodeContext& ctx) {
  OC_TRY(expect_shape(node, 0, 1, 2));
  OC_EXPECT(t->nullable, corrupt, "vortex.masked for non-nullable {} ({} children)", t->to_string(),
            node.children.size());
  OC_ASSIGN_OR_RETURN(auto values, ctx.decode(node.children[0], t->with_nullable(false), len));
  int64_t nulls = 0;
  OC_ASSIGN_OR_RETURN(Buffer validity, decode_validity(node, 1, t->nullable, len, ctx, nulls));
  // No validity child means all valid; a masked array that is all-invalid still has a child.
  return with_validity(values, std::move(validity), t);
}

}  // namespace

void register_masked() { register_encoding("vortex.masked", decode_masked, /*window_aware=*/true); }

}  // namespace oc::format::encodings
