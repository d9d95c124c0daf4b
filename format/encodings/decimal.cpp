// SPDX-License-Identifier: Apache-2.0
// vortex.decimal: fixed-point decimals stored as two's-complement integers.
//
// - buffers:  [values: len little-endian integers of the width named by `values_type`].
// - metadata: `DecimalMetadata { DecimalType values_type = 1 }` with 0 = i8, 1 = i16, 2 = i32,
//             3 = i64, 4 = i128, 5 = i256. Writers pick the smallest width that fits the
//             precision, so it usually differs from Arrow's.
// - children: [validity (optional)].
// Arrow stores decimals as i128 up to precision 38 and as i256 above; other widths are
// sign-extended (or, for an i256 buffer of a narrow decimal, checked and narrowed).
#include "format/encodings/decimal.hpp"

#include <cstring>

#include "format/decode.hpp"
#include "format/encodings/registry.hpp"
#include "format/proto/decimal.pb.h"

namespace oc::format::encodings {

namespace {

// Sign-extends @p len little-endian values of type S into Arrow's i128 (two words) or i256 (four
// words). The common case of a decimal column, so it runs without a call per value.
template <class S>
void widen(const uint8_t* src, uint64_t len, uint8_t* dst, size_t out_width) {
  const size_t words = out_width / sizeof(int64_t);
  for (uint64_t i = 0; i < len; ++i, src += sizeof(S), dst += out_width) {
    S v;
    std::memcpy(&v, src, sizeof(S));
    const int64_t low = v;
    const int64_t high = low >> 63;
    std::memcpy(dst, &low, sizeof(low));
    for (size_t w = 1; w < words; ++w) std::memcpy(dst + w * sizeof(int64_t), &high, sizeof(high));
  }
}

}  // namespace

Result<Buffer> resize_decimal_values(const uint8_t* src, size_t src_width, uint64_t len,
                                     size_t out_width) {
  Buffer out = Buffer::allocate_array_for_overwrite(len, out_width);
  uint8_t* dst = out.mutable_data();
  if (out_width == 16 || out_width == 32) {
    switch (src_width) {
      case 1:
        widen<int8_t>(src, len, dst, out_width);
        return out;
      case 2:
        widen<int16_t>(src, len, dst, out_width);
        return out;
      case 4:
        widen<int32_t>(src, len, dst, out_width);
        return out;
      case 8:
        widen<int64_t>(src, len, dst, out_width);
        return out;
      default:
        break;
    }
  }
  const size_t keep = src_width < out_width ? src_width : out_width;
  for (uint64_t i = 0; i < len; ++i, src += src_width, dst += out_width) {
    const uint8_t fill = (src[src_width - 1] & 0x80) ? 0xff : 0x00;
    std::memcpy(dst, src, keep);
    if (keep < out_width) {
      std::memset(dst + keep, fill, out_width - keep);
      continue;
    }
    // Narrowing: the dropped bytes must only repeat the sign of the kept value.
    const uint8_t kept_fill = (src[keep - 1] & 0x80) ? 0xff : 0x00;
    for (size_t b = keep; b < src_width; ++b) {
      OC_EXPECT(src[b] == kept_fill, corrupt, "decimal value {} does not fit in {} bytes", i,
                out_width);
    }
  }
  return out;
}

namespace {

constexpr size_t kValueWidths[] = {1, 2, 4, 8, 16, 32};

Result<ColumnPtr> decode_decimal(const ArrayView& node, const DTypePtr& t, uint64_t len,
                                 DecodeContext& ctx) {
  OC_TRY(expect_shape(node, 1, 0, 1));
  OC_EXPECT(t->kind == TypeKind::decimal, corrupt, "vortex.decimal for {}", t->to_string());
  OC_ASSIGN_OR_RETURN(auto meta,
                      parse_metadata<pb::DecimalMetadata>(node.metadata, "vortex.decimal"));
  OC_EXPECT(meta.values_type() >= 0 && meta.values_type() < 6, corrupt, "decimal values_type {}",
            meta.values_type());
  const size_t width = kValueWidths[meta.values_type()];
  const Buffer& values = node.buffers[0];
  OC_EXPECT(holds_exactly(values.size(), len, width), corrupt,
            "decimal buffer is {} bytes, expected {} x {}", values.size(), len, width);
  const size_t out_width = decimal_arrow_width(t->precision);

  auto c = std::make_shared<Column>();
  c->dtype = t;
  c->length = len;
  if (width == out_width && reinterpret_cast<uintptr_t>(values.data()) % 16 == 0) {
    c->buffers.push_back(values);
  } else {
    OC_TRY(ctx.check_alloc(len, out_width, "decimal values"));
    OC_ASSIGN_OR_RETURN(Buffer resized,
                        resize_decimal_values(values.data(), width, len, out_width));
    c->buffers.push_back(std::move(resized));
  }
  int64_t nulls = 0;
  OC_ASSIGN_OR_RETURN(c->validity, decode_validity(node, 0, t->nullable, len, ctx, nulls));
  c->null_count = nulls;
  return ColumnPtr(std::move(c));
}

}  // namespace

void register_decimal() { register_encoding("vortex.decimal", decode_decimal); }

}  // namespace oc::format::encodings
