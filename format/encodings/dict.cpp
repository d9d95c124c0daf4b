// SPDX-License-Identifier: Apache-2.0
// vortex.dict (the array encoding; the dict *layout* is a different thing, with its children in
// the opposite order): each row is a code indexing a dictionary of values.
//
//   metadata: DictMetadata { values_len = 1, codes_ptype = 2, optional is_nullable_codes = 3,
//             optional all_values_referenced = 4 } (format/proto/dict.proto)
//   buffers:  none
//   children: [codes: len integers of codes_ptype, nullable iff is_nullable_codes (when absent:
//              iff the dtype is nullable),
//              values: values_len rows of the array's own dtype]
//
// Row i is values[codes[i]], or null where the code is null. Any value dtype works.
//
// A few codes can repeat a large value many times, so the gathered size is checked against the
// decode limit before gathering (exactly for strings and fixed-width values).
//
// A take takes the codes' rows only, and gathers their values from the whole dictionary.
#include "format/encodings/dict.hpp"

#include <algorithm>

#include "format/decode.hpp"
#include "format/encodings/integers.hpp"
#include "format/encodings/registry.hpp"
#include "format/proto/dict.pb.h"
#include "format/string_views.hpp"

namespace oc::format::encodings {

Result<DictShape> parse_dict(const ArrayView& node, const DTypePtr& t) {
  OC_TRY(expect_shape(node, 0, 2, 2));
  OC_ASSIGN_OR_RETURN(auto meta, parse_metadata<pb::DictMetadata>(node.metadata, "vortex.dict"));
  OC_ASSIGN_OR_RETURN(PType codes_ptype, integer_ptype(meta.codes_ptype(), "dict codes"));
  const bool nullable_codes = meta.has_is_nullable_codes() ? meta.is_nullable_codes() : t->nullable;
  OC_EXPECT(!nullable_codes || t->nullable, corrupt, "dict with nullable codes for {}",
            t->to_string());
  return DictShape{DType::make_primitive(codes_ptype, nullable_codes), meta.values_len()};
}

namespace {

// Checks the bytes that gathering @p codes from @p values will allocate.
Result<void> check_gather(const Column& values, const Column& codes, DecodeContext& ctx) {
  const DType& t = values.dtype->storage();
  if (t.kind != TypeKind::utf8 && t.kind != TypeKind::binary) {
    const uint64_t width = std::max<uint64_t>(fixed_width_of(t), 1);
    return ctx.check_alloc(codes.length, width, "dict values");
  }
  if (values.string_views) return ctx.check_alloc(codes.length, kViewBytes, "dict values");
  // Offsets: a few codes can repeat a large value many times. Codes out of range are
  // gather_codes' to report.
  const int32_t* offsets = values.offsets();
  uint64_t total = 0;
  for (uint64_t i = 0; i < codes.length; ++i) {
    const uint64_t code = unsigned_at(codes, i);
    if (!codes.is_valid(i) || code >= values.length || !values.is_valid(code)) continue;
    total = saturating_add(total, static_cast<uint64_t>(offsets[code + 1] - offsets[code]));
  }
  OC_EXPECT(total <= INT32_MAX, unsupported,
            "dict gathers {} bytes of strings, past Arrow's 2 GiB i32 offsets", total);
  return ctx.check_alloc(total, "dict values");
}

// String @p values to gather @p rows rows from, in the layout that costs least for strings
// delivered as @p wanted: views (16 bytes a row, no value copied) or offsets (a copy of each
// row's value). The dictionary is converted when it has no more values than rows to gather
// (converting costs about one gather of its size); a take from a large dictionary gathers it as
// it is, and the scan converts the few rows.
Result<ColumnPtr> strings_to_gather(const ColumnPtr& values, uint64_t rows, StringLayout wanted) {
  const TypeKind k = values->dtype->storage().kind;
  if ((k != TypeKind::utf8 && k != TypeKind::binary) || rows < values->length) return values;
  return with_string_layout(values, wanted);
}

// Row i of the result is values[codes[i]], or null where the code is.
Result<ColumnPtr> gather_values(const ArrayView& node, const DTypePtr& t, const DictShape& shape,
                                const ColumnPtr& codes, DecodeContext& ctx) {
  const uint64_t n = codes->length;
  if (ptype_is_signed(codes->dtype->storage().ptype)) {
    OC_TRY(unsigned_rows(*codes, "dict codes"));  // a negative code is corrupt, not a large one
  }
  // An empty dictionary has nothing to gather from: only all-null rows can refer to it.
  if (shape.values_len == 0) {
    OC_EXPECT(codes->null_count == static_cast<int64_t>(n), corrupt,
              "dict codes refer to an empty dictionary");
    return make_all_null(t, n);
  }
  OC_ASSIGN_OR_RETURN(ColumnPtr values, ctx.decode(node.children[1], t, shape.values_len));
  OC_ASSIGN_OR_RETURN(values, strings_to_gather(values, n, ctx.strings()));
  OC_TRY(check_gather(*values, *codes, ctx));
  auto gathered = gather_codes(values, *codes);
  if (!gathered.ok()) return std::move(gathered.error()).with_context("gathering dict values");
  return gathered;
}

Result<ColumnPtr> decode_dict(const ArrayView& node, const DTypePtr& t, uint64_t len,
                              DecodeContext& ctx) {
  OC_ASSIGN_OR_RETURN(DictShape shape, parse_dict(node, t));
  OC_TRY(ctx.check_alloc(len, sizeof(uint64_t), "dict codes"));
  OC_ASSIGN_OR_RETURN(ColumnPtr codes, ctx.decode(node.children[0], shape.codes_t, len));
  return gather_values(node, t, shape, codes, ctx);
}

Result<ColumnPtr> take_dict(const ArrayView& node, const DTypePtr& t, uint64_t len,
                            std::span<const uint64_t> rows, DecodeContext& ctx) {
  OC_ASSIGN_OR_RETURN(DictShape shape, parse_dict(node, t));
  OC_ASSIGN_OR_RETURN(ColumnPtr codes, ctx.decode_take(node.children[0], shape.codes_t, len, rows));
  return gather_values(node, t, shape, codes, ctx);
}

}  // namespace

void register_dict() {
  register_encoding("vortex.dict", decode_dict);
  register_take("vortex.dict", take_dict);
}

}  // namespace oc::format::encodings
