// SPDX-License-Identifier: Apache-2.0
// vortex.sparse: a fill value everywhere except at listed rows.
//
//   dtype:     any type with a scalar form (the writer emits it for mostly-constant or mostly-null
//              data: integers, floats, strings, ...).
//   metadata:  SparseMetadata { patches = 1 } (format/proto/sparse.proto), always written.
//   buffers:   0  the fill value as a protobuf ScalarValue (format/proto/scalar.proto); null only
//                 for a nullable dtype.
//   children:  exactly the patches (format/patches.hpp) without chunk offsets: 0 indices,
//              1 values of the array's dtype (nulls included).
#include <algorithm>

#include "format/decode.hpp"
#include "format/encodings/integers.hpp"
#include "format/encodings/registry.hpp"
#include "format/patches.hpp"
#include "format/proto/sparse.pb.h"
#include "format/scalar.hpp"

namespace oc::format::encodings {
namespace {

Result<ColumnPtr> decode_sparse(const ArrayView& node, const DTypePtr& t, uint64_t len,
                                DecodeContext& ctx) {
  OC_TRY(expect_shape(node, 1, 2, 2));
  OC_ASSIGN_OR_RETURN(auto meta,
                      parse_metadata<pb::SparseMetadata>(node.metadata, "vortex.sparse"));
  OC_ASSIGN_OR_RETURN(Scalar fill, parse_scalar(node.buffers[0].span()));
  OC_TRY(
      ctx.check_alloc(saturating_mul(len, std::max<size_t>(fixed_width_of(*t), 1)), "sparse fill"));
  OC_ASSIGN_OR_RETURN(ColumnPtr filled, scalar_to_column(fill, t, len));
  size_t used = 0;  // always 2: expect_shape leaves no room for chunk offsets
  OC_ASSIGN_OR_RETURN(DecodedPatches patches,
                      decode_patches(node, 0, meta.patches(), t, len, ctx, used));
  return apply_patches(filled, patches);
}

}  // namespace

void register_sparse() { register_encoding("vortex.sparse", decode_sparse); }

}  // namespace oc::format::encodings
