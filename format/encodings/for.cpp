// SPDX-License-Identifier: Apache-2.0
// fastlanes.for: frame of reference, value = encoded + reference (wrapping, in the value's width).
//   dtype:     any integer ptype.
//   metadata:  the reference as a bare protobuf `ScalarValue` (format/proto/scalar.proto), not
//              wrapped in a message; it must be non-null.
//   children:  0 = encoded, with the array's own dtype (signed arrays keep signed children:
//              subtracting the reference wraps, so the bits add back exactly); it carries the
//              validity.
// Slices and takes pass their rows to the child and add the reference to just those; a
// fastlanes.bitpacked child adds it itself, block by block as it unpacks
// (DecodeContext::decode_adding).
#include <cstring>

#include "format/decode.hpp"
#include "format/encodings/accepts.hpp"
#include "format/encodings/registry.hpp"
#include "format/scalar.hpp"

namespace oc::format::encodings {
namespace {

// Adds @p reference to rows [offset, offset + length) of @p in, into the same rows of @p out.
template <class U>
void add_reference(const uint8_t* in, uint8_t* out, uint64_t offset, uint64_t length,
                   uint64_t reference) {
  const U* src = reinterpret_cast<const U*>(in) + offset;
  U* dst = reinterpret_cast<U*>(out) + offset;
  const U ref = static_cast<U>(reference);
  for (uint64_t i = 0; i < length; ++i) dst[i] = static_cast<U>(src[i] + ref);
}

}  // namespace

Result<uint64_t> accept_for(const ArrayView& node, const DTypePtr& t) {
  OC_TRY(expect_shape(node, 0, 1, 1));
  const DType& storage = t->storage();
  OC_EXPECT(storage.kind == TypeKind::primitive && !ptype_is_float(storage.ptype), corrupt,
            "fastlanes.for for {}", t->to_string());
  OC_ASSIGN_OR_RETURN(Scalar reference_scalar, parse_scalar(node.metadata));
  OC_EXPECT(!reference_scalar.is_null(), corrupt, "fastlanes.for reference is null");
  return scalar_to_bits(reference_scalar, storage.ptype);
}

namespace {

// The decoded child @p encoded plus @p reference. The result keeps the child's offset and
// validity; only the values change.
Result<ColumnPtr> with_reference(const ColumnPtr& encoded, const DTypePtr& t, uint64_t reference,
                                 DecodeContext& ctx) {
  const DType& storage = t->storage();
  const uint64_t len = encoded->length;
  const size_t width = ptype_width(storage.ptype);
  OC_TRY(ctx.check_alloc(saturating_add(encoded->offset, len), width, "fastlanes.for"));
  // Rows [offset, offset + len) are all written; only the slots before the offset are cleared
  // (they are exported with the buffer, and must not carry old heap bytes).
  Buffer values = Buffer::allocate_array_for_overwrite(encoded->offset + len, width);
  std::memset(values.mutable_data(), 0, encoded->offset * width);
  const uint8_t* in = encoded->buffers[0].data();
  switch (width) {
    case 1:
      add_reference<uint8_t>(in, values.mutable_data(), encoded->offset, len, reference);
      break;
    case 2:
      add_reference<uint16_t>(in, values.mutable_data(), encoded->offset, len, reference);
      break;
    case 4:
      add_reference<uint32_t>(in, values.mutable_data(), encoded->offset, len, reference);
      break;
    default:
      add_reference<uint64_t>(in, values.mutable_data(), encoded->offset, len, reference);
      break;
  }
  auto out = std::make_shared<Column>(*encoded);
  out->dtype = t;
  out->buffers = {std::move(values)};
  return ColumnPtr(std::move(out));
}

Result<ColumnPtr> decode_for(const ArrayView& node, const DTypePtr& t, uint64_t len,
                             DecodeContext& ctx) {
  OC_ASSIGN_OR_RETURN(uint64_t reference, accept_for(node, t));
  // Under a slice decode the child returns just the window's rows. A child that adds the
  // reference as it unpacks (fastlanes.bitpacked) saves a pass over the column.
  bool added = false;
  OC_ASSIGN_OR_RETURN(ColumnPtr encoded,
                      ctx.decode_adding(node.children[0], t, len, reference, added));
  if (added) return encoded;
  return with_reference(encoded, t, reference, ctx);
}

Result<ColumnPtr> take_for(const ArrayView& node, const DTypePtr& t, uint64_t len,
                           std::span<const uint64_t> rows, DecodeContext& ctx) {
  OC_ASSIGN_OR_RETURN(uint64_t reference, accept_for(node, t));
  OC_ASSIGN_OR_RETURN(ColumnPtr encoded, ctx.decode_take(node.children[0], t, len, rows));
  return with_reference(encoded, t, reference, ctx);
}

}  // namespace

void register_for() {
  register_encoding("fastlanes.for", decode_for, /*window_aware=*/true);
  register_take("fastlanes.for", take_for);
}

}  // namespace oc::format::encodings
