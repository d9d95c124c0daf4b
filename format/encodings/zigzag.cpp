// SPDX-License-Identifier: Apache-2.0
// vortex.zigzag: signed integers stored as unsigned ones, 0, -1, 1, -2, ... -> 0, 1, 2, 3, ...
//   dtype:     a signed integer ptype.
//   metadata:  empty.
//   children:  0 = encoded, the unsigned ptype of the same width and the array's nullability;
//              it carries the validity. Decoding: value = (u >> 1) ^ -(u & 1).
// Slices and takes pass their rows to the child and decode just those.
#include <cstring>

#include "format/decode.hpp"
#include "format/encodings/accepts.hpp"
#include "format/encodings/registry.hpp"

namespace oc::format::encodings {
namespace {

// Decodes rows [offset, offset + length) of @p in into the same rows of @p out.
template <class U>
void unzigzag(const uint8_t* in, uint8_t* out, uint64_t offset, uint64_t length) {
  const U* src = reinterpret_cast<const U*>(in) + offset;
  U* dst = reinterpret_cast<U*>(out) + offset;
  for (uint64_t i = 0; i < length; ++i) {
    dst[i] = static_cast<U>((src[i] >> 1) ^ static_cast<U>(0 - (src[i] & 1)));
  }
}

}  // namespace

Result<DTypePtr> accept_zigzag(const ArrayView& node, const DTypePtr& t) {
  OC_TRY(expect_shape(node, 0, 1, 1));
  OC_EXPECT(node.metadata.empty(), corrupt, "vortex.zigzag metadata is {} bytes, expected none",
            node.metadata.size());
  const DType& storage = t->storage();
  OC_EXPECT(storage.kind == TypeKind::primitive && ptype_is_signed(storage.ptype), corrupt,
            "vortex.zigzag for {}", t->to_string());
  // Signed ptypes i8..i64 follow u8..u64 by 4 in the PType enum.
  const PType unsigned_ptype = static_cast<PType>(static_cast<uint8_t>(storage.ptype) - 4);
  return DType::make_primitive(unsigned_ptype, storage.nullable);
}

namespace {

// Decodes the child @p encoded. The result keeps the child's offset and validity; only the
// values change.
Result<ColumnPtr> unzigzag_column(const ColumnPtr& encoded, const DTypePtr& t, DecodeContext& ctx) {
  const DType& storage = t->storage();
  const uint64_t len = encoded->length;
  const size_t width = ptype_width(storage.ptype);
  OC_TRY(ctx.check_alloc(saturating_add(encoded->offset, len), width, "vortex.zigzag"));
  // Rows [offset, offset + len) are all written; only the slots before the offset are cleared
  // (they are exported with the buffer, and must not carry old heap bytes).
  Buffer values = Buffer::allocate_array_for_overwrite(encoded->offset + len, width);
  std::memset(values.mutable_data(), 0, encoded->offset * width);
  const uint8_t* in = encoded->buffers[0].data();
  switch (width) {
    case 1:
      unzigzag<uint8_t>(in, values.mutable_data(), encoded->offset, len);
      break;
    case 2:
      unzigzag<uint16_t>(in, values.mutable_data(), encoded->offset, len);
      break;
    case 4:
      unzigzag<uint32_t>(in, values.mutable_data(), encoded->offset, len);
      break;
    default:
      unzigzag<uint64_t>(in, values.mutable_data(), encoded->offset, len);
      break;
  }
  auto out = std::make_shared<Column>(*encoded);
  out->dtype = t;
  out->buffers = {std::move(values)};
  return ColumnPtr(std::move(out));
}

Result<ColumnPtr> decode_zigzag(const ArrayView& node, const DTypePtr& t, uint64_t len,
                                DecodeContext& ctx) {
  OC_ASSIGN_OR_RETURN(DTypePtr child_t, accept_zigzag(node, t));
  // Under a slice decode the child returns just the window's rows.
  OC_ASSIGN_OR_RETURN(ColumnPtr encoded, ctx.decode(node.children[0], child_t, len));
  return unzigzag_column(encoded, t, ctx);
}

Result<ColumnPtr> take_zigzag(const ArrayView& node, const DTypePtr& t, uint64_t len,
                              std::span<const uint64_t> rows, DecodeContext& ctx) {
  OC_ASSIGN_OR_RETURN(DTypePtr child_t, accept_zigzag(node, t));
  OC_ASSIGN_OR_RETURN(ColumnPtr encoded, ctx.decode_take(node.children[0], child_t, len, rows));
  return unzigzag_column(encoded, t, ctx);
}

}  // namespace

void register_zigzag() {
  register_encoding("vortex.zigzag", decode_zigzag, /*window_aware=*/true);
  register_take("vortex.zigzag", take_zigzag);
}

}  // namespace oc::format::encodings
