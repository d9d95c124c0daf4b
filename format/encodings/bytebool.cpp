// SPDX-License-Identifier: Apache-2.0
// vortex.bytebool: booleans stored one byte each (zero is false, anything else true).
//
// - buffers:  [values: len bytes].
// - metadata: empty.
// - children: [validity (optional)].
// Arrow wants a bitmap, so the bytes are packed LSB first.
#include "format/decode.hpp"
#include "format/encodings/registry.hpp"

namespace oc::format::encodings {
namespace {

Result<ColumnPtr> decode_bytebool(const ArrayView& node, const DTypePtr& t, uint64_t len,
                                  DecodeContext& ctx) {
  OC_TRY(expect_shape(node, 1, 0, 1));
  OC_EXPECT(t->kind == TypeKind::boolean, corrupt, "vortex.bytebool for {}", t->to_string());
  const Buffer& bytes = node.buffers[0];
  OC_EXPECT(bytes.size() == len, corrupt, "bytebool buffer is {} bytes for {} rows", bytes.size(),
            len);
  Buffer bits = make_bitmap(len, false);
  for (uint64_t i = 0; i < len; ++i) {
    if (bytes.data()[i] != 0) bitmap_set(bits.mutable_data(), i, true);
  }
  auto c = std::make_shared<Column>();
  c->dtype = t;
  c->length = len;
  c->buffers.push_back(std::move(bits));
  int64_t nulls = 0;
  OC_ASSIGN_OR_RETURN(c->validity, decode_validity(node, 0, t->nullable, len, ctx, nulls));
  c->null_count = nulls;
  return ColumnPtr(std::move(c));
}

}  // namespace

void register_bytebool() { register_encoding("vortex.bytebool", decode_bytebool); }

}  // namespace oc::format::encodings
