// SPDX-License-Identifier: Apache-2.0
// vortex.onpair: strings and binary compressed with OnPair, a dictionary of short tokens
// (1..16 bytes each) addressed by codes of up to 16 bits.
//
//   metadata: OnPairMetadata { uncompressed_lengths_ptype = 1, bits = 2, dict_size = 3,
//             total_tokens = 4, dict_offsets_ptype = 5, codes_ptype = 6,
//             codes_offsets_ptype = 7 } (format/proto/onpair.proto)
//   buffers:  [dict_bytes: the tokens concatenated, then writer padding (unspecified bytes)]
//   children: [dict_offsets: dict_size + 1 non-nullable integers; token k is
//                            dict_bytes[dict_offsets[k], dict_offsets[k + 1]),
//              codes: total_tokens non-nullable integers, each a token index < dict_size,
//              codes_offsets: len + 1 non-nullable integers into codes,
//              uncompressed_lengths: len non-nullable integers,
//              validity (optional)]
//
// Row i's bytes are the tokens of codes[codes_offsets[i], codes_offsets[i + 1]) concatenated in
// order, and must be exactly uncompressed_lengths[i] bytes (the writer compresses each string on
// its own, so no token spans two rows). Null rows have length 0 as written and are decoded like
// any other row. `bits` plays no part in decoding.
//
// Output: Arrow utf8/binary. UTF-8 is not validated.
#include <cstring>

#include "format/decode.hpp"
#include "format/encodings/integers.hpp"
#include "format/encodings/registry.hpp"
#include "format/proto/onpair.pb.h"

namespace oc::format::encodings {
namespace {

// Decodes an integer child whose ptype the metadata names.
Result<std::vector<uint64_t>> integer_child(const ArrayView& node, size_t index, int32_t raw_ptype,
                                            uint64_t len, DecodeContext& ctx,
                                            std::string_view what) {
  OC_ASSIGN_OR_RETURN(PType ptype, integer_ptype(static_cast<uint64_t>(raw_ptype), what));
  return decode_unsigned_child(node, index, ptype, len, ctx, what);
}

Result<ColumnPtr> decode_onpair(const ArrayView& node, const DTypePtr& t, uint64_t len,
                                DecodeContext& ctx) {
  const DType& st = t->storage();
  OC_EXPECT(st.kind == TypeKind::utf8 || st.kind == TypeKind::binary, corrupt,
            "vortex.onpair for {}", t->to_string());
  OC_TRY(expect_shape(node, 1, 4, 5));
  OC_ASSIGN_OR_RETURN(auto meta,
                      parse_metadata<pb::OnPairMetadata>(node.metadata, "vortex.onpair"));
  OC_EXPECT(len < UINT64_MAX, corrupt, "onpair length {} has no room for offsets", len);
  const Buffer& dict_bytes = node.buffers[0];

  OC_ASSIGN_OR_RETURN(auto dict_offsets,
                      integer_child(node, 0, meta.dict_offsets_ptype(),
                                    uint64_t{meta.dict_size()} + 1, ctx, "onpair dict offsets"));
  for (uint64_t k = 0; k < meta.dict_size(); ++k) {
    OC_EXPECT(dict_offsets[k] <= dict_offsets[k + 1], corrupt,
              "onpair dict offsets decrease at token {}: {} > {}", k, dict_offsets[k],
              dict_offsets[k + 1]);
  }
  OC_EXPECT(dict_offsets.back() <= dict_bytes.size(), corrupt,
            "onpair dict offsets end at {} past {} dict bytes", dict_offsets.back(),
            dict_bytes.size());

  OC_ASSIGN_OR_RETURN(auto codes, integer_child(node, 1, meta.codes_ptype(), meta.total_tokens(),
                                                ctx, "onpair codes"));
  OC_ASSIGN_OR_RETURN(auto codes_offsets, integer_child(node, 2, meta.codes_offsets_ptype(),
                                                        len + 1, ctx, "onpair codes offsets"));
  OC_ASSIGN_OR_RETURN(auto lengths, integer_child(node, 3, meta.uncompressed_lengths_ptype(), len,
                                                  ctx, "onpair uncompressed lengths"));
  uint64_t total = 0;
  for (uint64_t n : lengths) {
    OC_EXPECT(n <= INT32_MAX - total, unsupported,
              "onpair column of more than {} bytes exceeds Arrow's 2 GiB i32 offsets", INT32_MAX);
    total += n;
  }
  OC_EXPECT(codes_offsets.back() <= codes.size(), corrupt,
            "onpair codes offsets end at {} past {} codes", codes_offsets.back(), codes.size());
  int64_t null_count = 0;
  OC_ASSIGN_OR_RETURN(Buffer validity, decode_validity(node, 4, st.nullable, len, ctx, null_count));

  OC_TRY(ctx.check_alloc(saturating_add(total, saturating_mul(len + 1, sizeof(int32_t))),
                         "onpair values"));
  Buffer bytes = Buffer::allocate_for_overwrite(total);
  Buffer offsets = Buffer::allocate_array_for_overwrite(len + 1, sizeof(int32_t));
  int32_t* out_offsets = offsets.mutable_as<int32_t>();
  // Row by row: each row's codes [codes_offsets[i], codes_offsets[i + 1]) must decode to exactly
  // its uncompressed length, so a lying row is an error, never strings shifted into the next.
  uint64_t pos = 0;
  for (uint64_t i = 0; i < len; ++i) {
    out_offsets[i] = static_cast<int32_t>(pos);
    const uint64_t first = codes_offsets[i], end = codes_offsets[i + 1];
    OC_EXPECT(first <= end, corrupt, "onpair codes offsets decrease at row {}: {} > {}", i, first,
              end);
    const uint64_t row_end = pos + lengths[i];  // <= total, checked above
    for (uint64_t j = first; j < end; ++j) {
      const uint64_t code = codes[j];
      OC_EXPECT(code < meta.dict_size(), corrupt, "onpair code {} at {} names no token of {}", code,
                j, meta.dict_size());
      const uint64_t begin = dict_offsets[code];
      const uint64_t size = dict_offsets[code + 1] - begin;
      OC_EXPECT(size <= row_end - pos, corrupt, "onpair row {} decodes past its {} bytes", i,
                lengths[i]);
      if (size != 0) std::memcpy(bytes.mutable_data() + pos, dict_bytes.data() + begin, size);
      pos += size;
    }
    OC_EXPECT(pos == row_end, corrupt, "onpair row {} decodes to {} bytes, its length is {}", i,
              lengths[i] - (row_end - pos), lengths[i]);
  }
  out_offsets[len] = static_cast<int32_t>(pos);

  auto c = std::make_shared<Column>();
  c->dtype = t;
  c->length = len;
  c->validity = std::move(validity);
  c->null_count = null_count;
  c->buffers.push_back(std::move(offsets));
  c->buffers.push_back(std::move(bytes));
  return ColumnPtr(std::move(c));
}

}  // namespace

void register_onpair() { register_encoding("vortex.onpair", decode_onpair); }

}  // namespace oc::format::encodings
