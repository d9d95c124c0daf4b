// SPDX-License-Identifier: Apache-2.0
// vortex.constant: one value repeated `len` times.
//   buffer 0 = protobuf ScalarValue (format/proto/scalar.proto); no children; no metadata.
//   A null scalar is an all-null column; the writer also uses constant(false) as validity.
//   Any rows of it, taken or sliced, are the value repeated.
#include "format/decode.hpp"
#include "format/encodings/registry.hpp"
#include "format/scalar.hpp"

namespace oc::format::encodings {
namespace {

Result<ColumnPtr> decode_constant(const ArrayView& node, const DTypePtr& t, uint64_t len,
                                  DecodeContext& ctx) {
  OC_TRY(expect_shape(node, 1, 0, 0));
  OC_ASSIGN_OR_RETURN(Scalar s, parse_scalar(node.buffers[0].span()));
  const uint64_t rows = ctx.window() ? ctx.window()->size() : len;
  OC_TRY(ctx.check_alloc(rows, std::max<size_t>(fixed_width_of(*t), 1), "constant"));
  return scalar_to_column(s, t, rows);
}

Result<ColumnPtr> take_constant(const ArrayView& node, const DTypePtr& t, uint64_t,
                                std::span<const uint64_t> rows, DecodeContext& ctx) {
  OC_TRY(expect_shape(node, 1, 0, 0));
  ctx.need(node.buffers[0]);
  OC_ASSIGN_OR_RETURN(Scalar s, parse_scalar(node.buffers[0].span()));
  OC_TRY(ctx.check_alloc(rows.size(), std::max<size_t>(fixed_width_of(*t), 1), "constant"));
  return scalar_to_column(s, t, rows.size());
}

}  // namespace

void register_constant() {
  register_encoding("vortex.constant", decode_constant, /*window_aware=*/true);
  register_take("vortex.constant", take_constant);
}

}  // namespace oc::format::encodings
