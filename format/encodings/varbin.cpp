// SPDX-License-Identifier: Apache-2.0
// vortex.varbin: strings and binary as offsets into one bytes buffer (Arrow's layout with any
// integer offset type; written by older Vortex versions and for Arrow string/binary input).
//
//   metadata: VarBinMetadata { offsets_ptype = 1 } (format/proto/varbin.proto)
//   buffers:  [bytes]
//   children: [offsets: len + 1 non-nullable integers of offsets_ptype, validity (optional)]
//
// Value i is bytes[offsets[i], offsets[i + 1]). Offsets must not decrease and may start above 0
// (a sliced array); the last must lie within the bytes buffer.
//
// Output: Arrow utf8/binary whose bytes buffer is a zero-copy slice of the segment; the offsets
// are rebased to start at 0 and narrowed to i32. UTF-8 is not validated.
#include "format/decode.hpp"
#include "format/encodings/integers.hpp"
#include "format/encodings/registry.hpp"
#include "format/proto/varbin.pb.h"

namespace oc::format::encodings {
namespace {

Result<ColumnPtr> decode_varbin(const ArrayView& node, const DTypePtr& t, uint64_t len,
                                DecodeContext& ctx) {
  const DType& st = t->storage();
  OC_EXPECT(st.kind == TypeKind::utf8 || st.kind == TypeKind::binary, corrupt,
            "vortex.varbin for {}", t->to_string());
  OC_TRY(expect_shape(node, 1, 1, 2));
  OC_ASSIGN_OR_RETURN(auto meta,
                      parse_metadata<pb::VarBinMetadata>(node.metadata, "vortex.varbin"));
  OC_ASSIGN_OR_RETURN(PType offsets_ptype, integer_ptype(meta.offsets_ptype(), "varbin offsets"));
  OC_EXPECT(len < UINT64_MAX, corrupt, "varbin length {} has no room for offsets", len);
  OC_ASSIGN_OR_RETURN(
      auto offsets, decode_unsigned_child(node, 0, offsets_ptype, len + 1, ctx, "varbin offsets"));
  const Buffer& bytes = node.buffers[0];
  for (uint64_t i = 0; i < len; ++i) {
    OC_EXPECT(offsets[i] <= offsets[i + 1], corrupt, "varbin offsets decrease at row {}: {} > {}",
              i, offsets[i], offsets[i + 1]);
  }
  const uint64_t first = offsets[0];
  const uint64_t last = offsets[len];
  OC_EXPECT(last <= bytes.size(), corrupt, "varbin offsets end at {} past a {}-byte buffer", last,
            bytes.size());
  OC_EXPECT(last - first <= INT32_MAX, unsupported,
            "varbin column of {} bytes exceeds Arrow's 2 GiB i32 offsets", last - first);

  int64_t nulls = 0;
  OC_ASSIGN_OR_RETURN(Buffer validity, decode_validity(node, 1, st.nullable, len, ctx, nulls));

  Buffer arrow_offsets = Buffer::allocate_array(saturating_add(len, 1), sizeof(int32_t));
  int32_t* out = arrow_offsets.mutable_as<int32_t>();
  for (uint64_t i = 0; i <= len; ++i) out[i] = static_cast<int32_t>(offsets[i] - first);

  auto c = std::make_shared<Column>();
  c->dtype = t;
  c->length = len;
  c->validity = std::move(validity);
  c->null_count = nulls;
  c->buffers.push_back(std::move(arrow_offsets));
  c->buffers.push_back(bytes.slice(first, last - first));
  return ColumnPtr(std::move(c));
}

}  // namespace

void register_varbin() { register_encoding("vortex.varbin", decode_varbin); }

}  // namespace oc::format::encodings
