// SPDX-License-Identifier: Apache-2.0
// vortex.sequence: row i = base + i x multiplier (wrapping in the value's width).
//   dtype:     any integer ptype; a nullable dtype still has no nulls.
//   metadata:  `SequenceMetadata { ScalarValue base = 1; ScalarValue multiplier = 2 }`
//              (format/proto/sequence.proto); both required and non-null.
//   no buffers, no children.
//   A take computes each row's value in closed form.
#include "format/decode.hpp"
#include "format/encodings/registry.hpp"
#include "format/proto/sequence.pb.h"
#include "format/scalar.hpp"

namespace oc::format::encodings {
namespace {

template <class U>
void fill_sequence(uint8_t* out, uint64_t length, uint64_t base, uint64_t multiplier) {
  U* dst = reinterpret_cast<U*>(out);
  U value = static_cast<U>(base);
  const U step = static_cast<U>(multiplier);
  for (uint64_t i = 0; i < length; ++i, value = static_cast<U>(value + step)) dst[i] = value;
}

// Row r is base + r x multiplier; the product wraps in 64 bits and truncates like the sum.
template <class U>
void fill_rows(uint8_t* out, std::span<const uint64_t> rows, uint64_t base, uint64_t multiplier) {
  U* dst = reinterpret_cast<U*>(out);
  for (size_t i = 0; i < rows.size(); ++i) dst[i] = static_cast<U>(base + rows[i] * multiplier);
}

// @return the raw bits of the serialized ScalarValue @p bytes as a value of @p ptype.
Result<uint64_t> scalar_field(const std::string& bytes, PType ptype, const char* what) {
  OC_ASSIGN_OR_RETURN(Scalar s,
                      parse_scalar({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()}));
  OC_EXPECT(!s.is_null(), corrupt, "vortex.sequence {} is missing or null", what);
  return scalar_to_bits(s, ptype);
}

struct Sequence {
  uint64_t base = 0, multiplier = 0;
};

Result<Sequence> parse_sequence(const ArrayView& node, const DTypePtr& t) {
  OC_TRY(expect_shape(node, 0, 0, 0));
  const DType& storage = t->storage();
  OC_EXPECT(storage.kind == TypeKind::primitive && !ptype_is_float(storage.ptype), corrupt,
            "vortex.sequence for {}", t->to_string());
  OC_ASSIGN_OR_RETURN(auto meta,
                      parse_metadata<pb::SequenceMetadata>(node.metadata, "vortex.sequence"));
  Sequence s;
  OC_ASSIGN_OR_RETURN(s.base, scalar_field(meta.base(), storage.ptype, "base"));
  OC_ASSIGN_OR_RETURN(s.multiplier, scalar_field(meta.multiplier(), storage.ptype, "multiplier"));
  return s;
}

Result<ColumnPtr> decode_sequence(const ArrayView& node, const DTypePtr& t, uint64_t len,
                                  DecodeContext& ctx) {
  OC_ASSIGN_OR_RETURN(Sequence seq, parse_sequence(node, t));
  const uint64_t base = seq.base, multiplier = seq.multiplier;
  const DType& storage = t->storage();
  const size_t width = ptype_width(storage.ptype);
  OC_TRY(ctx.check_alloc(len, width, "vortex.sequence"));
  Buffer values = Buffer::allocate_array_for_overwrite(len, width);
  switch (width) {
    case 1:
      fill_sequence<uint8_t>(values.mutable_data(), len, base, multiplier);
      break;
    case 2:
      fill_sequence<uint16_t>(values.mutable_data(), len, base, multiplier);
      break;
    case 4:
      fill_sequence<uint32_t>(values.mutable_data(), len, base, multiplier);
      break;
    default:
      fill_sequence<uint64_t>(values.mutable_data(), len, base, multiplier);
      break;
  }
  auto out = std::make_shared<Column>();
  out->dtype = t;
  out->length = len;
  out->buffers.push_back(std::move(values));
  return ColumnPtr(std::move(out));
}

Result<ColumnPtr> take_sequence(const ArrayView& node, const DTypePtr& t, uint64_t,
                                std::span<const uint64_t> rows, DecodeContext&) {
  OC_ASSIGN_OR_RETURN(Sequence seq, parse_sequence(node, t));
  const size_t width = ptype_width(t->storage().ptype);
  Buffer values = Buffer::allocate_array_for_overwrite(rows.size(), width);
  switch (width) {
    case 1:
      fill_rows<uint8_t>(values.mutable_data(), rows, seq.base, seq.multiplier);
      break;
    case 2:
      fill_rows<uint16_t>(values.mutable_data(), rows, seq.base, seq.multiplier);
      break;
    case 4:
      fill_rows<uint32_t>(values.mutable_data(), rows, seq.base, seq.multiplier);
      break;
    default:
      fill_rows<uint64_t>(values.mutable_data(), rows, seq.base, seq.multiplier);
      break;
  }
  auto out = std::make_shared<Column>();
  out->dtype = t;
  out->length = rows.size();
  out->buffers.push_back(std::move(values));
  return ColumnPtr(std::move(out));
}

}  // namespace

void register_sequence() {
  register_encoding("vortex.sequence", decode_sequence);
  register_take("vortex.sequence", take_sequence);
}

}  // namespace oc::format::encodings
