// SPDX-License-Identifier: Apache-2.0
// fastlanes.rle: per 1024-row block, a list of run values and one run index per row.
//   dtype:     any primitive ptype (integers and floats).
//   metadata:  `RleMetadata { values_len = 1; indices_len = 2; indices_ptype = 3;
//              values_idx_offsets_len = 4; values_idx_offsets_ptype = 5; offset = 6 }`
//              (format/proto/rle.proto); offset < 1024 rows of block 0 precede row 0.
//   children:  0 = values: values_len of the array's ptype, non-nullable; the values of block b
//                  are values[o[b] - o[0] .. o[b + 1] - o[0]) (the last block's run to the end);
//              1 = indices: indices_len (whole blocks) of u8 or u16 with the array's
//                  nullability; index k of a row in block b names values[o[b] - o[0] + k], and
//                  its validity is the row's (null rows may hold any index);
//              2 = values_idx_offsets (o): one unsigned integer per block, absolute, so they are
//                  rebased on o[0].
//   Row i of the array is block row offset + i. A block with a single value takes it for every
//   row, whatever its indices say.
#include <algorithm>
#include <cstring>

#include "format/decode.hpp"
#include "format/encodings/registry.hpp"
#include "format/proto/rle.pb.h"

namespace oc::format::encodings {
namespace {

constexpr uint64_t kBlock = 1024;

Result<PType> unsigned_ptype(uint32_t raw, const char* what) {
  OC_ASSIGN_OR_RETURN(PType p, ptype_from(raw));
  OC_EXPECT(!ptype_is_float(p) && !ptype_is_signed(p), corrupt,
            "fastlanes.rle {} must be unsigned integers, got {}", what, ptype_name(p));
  return p;
}

Result<ColumnPtr> decode_rle(const ArrayView& node, const DTypePtr& t, uint64_t len,
                             DecodeContext& ctx) {
  OC_TRY(expect_shape(node, 0, 3, 3));
  const DType& storage = t->storage();
  OC_EXPECT(storage.kind == TypeKind::primitive, corrupt, "fastlanes.rle for {}", t->to_string());
  OC_ASSIGN_OR_RETURN(auto meta, parse_metadata<pb::RleMetadata>(node.metadata, "fastlanes.rle"));
  OC_ASSIGN_OR_RETURN(PType index_ptype, unsigned_ptype(meta.indices_ptype(), "indices"));
  OC_EXPECT(index_ptype == PType::u8 || index_ptype == PType::u16, corrupt,
            "fastlanes.rle indices must be u8 or u16, got {}", ptype_name(index_ptype));
  OC_ASSIGN_OR_RETURN(PType offsets_ptype,
                      unsigned_ptype(meta.values_idx_offsets_ptype(), "value offsets"));
  const uint64_t offset = meta.offset();
  const uint64_t indices_len = meta.indices_len();
  const uint64_t blocks = meta.values_idx_offsets_len();
  OC_EXPECT(offset < kBlock, corrupt, "fastlanes.rle offset {} >= 1024", offset);
  OC_EXPECT(indices_len % kBlock == 0 && blocks == indices_len / kBlock, corrupt,
            "fastlanes.rle has {} indices for {} blocks", indices_len, blocks);
  OC_EXPECT(indices_len >= offset && len <= indices_len - offset, corrupt,
            "fastlanes.rle rows {} + {} exceed {} indices", offset, len, indices_len);
  OC_EXPECT(meta.values_len() <= indices_len, corrupt, "fastlanes.rle has {} values for {} rows",
            meta.values_len(), indices_len);
  const size_t width = ptype_width(storage.ptype);
  // Bounds every child by the indices, whose size the context then limits.
  OC_TRY(ctx.check_alloc(indices_len, 8, "fastlanes.rle"));

  OC_ASSIGN_OR_RETURN(
      ColumnPtr values,
      ctx.decode(node.children[0], DType::make_primitive(storage.ptype, false), meta.values_len()));
  OC_ASSIGN_OR_RETURN(
      ColumnPtr indices,
      ctx.decode(node.children[1], DType::make_primitive(index_ptype, storage.nullable),
                 indices_len));
  OC_ASSIGN_OR_RETURN(
      ColumnPtr offsets,
      ctx.decode(node.children[2], DType::make_primitive(offsets_ptype, false), blocks));

  Buffer out = Buffer::allocate_array(len, width);
  const uint8_t* value_bytes = values->buffers[0].data() + values->offset * width;
  const uint64_t first_offset = blocks == 0 ? 0 : unsigned_at(*offsets, 0);
  for (uint64_t row = 0; row < len;) {
    const uint64_t block = (offset + row) / kBlock;
    const uint64_t block_end = std::min<uint64_t>((block + 1) * kBlock - offset, len);
    const uint64_t start = unsigned_at(*offsets, block) - first_offset;
    const uint64_t end =
        block + 1 < blocks ? unsigned_at(*offsets, block + 1) - first_offset : meta.values_len();
    OC_EXPECT(
        unsigned_at(*offsets, block) >= first_offset && start < end && end <= meta.values_len(),
        corrupt, "fastlanes.rle block {} has values [{}, {}) of {}", block, start, end,
        meta.values_len());
    const uint64_t count = end - start;
    for (; row < block_end; ++row) {
      uint64_t k = 0;
      if (count > 1 && indices->is_valid(offset + row)) {
        k = unsigned_at(*indices, offset + row);
        OC_EXPECT(k < count, corrupt, "fastlanes.rle index {} in a block of {} values", k, count);
      }
      std::memcpy(out.mutable_data() + row * width, value_bytes + (start + k) * width, width);
    }
  }

  auto c = std::make_shared<Column>();
  c->dtype = t;
  c->length = len;
  c->buffers.push_back(std::move(out));
  if (indices->null_count != 0) {
    Buffer validity = make_bitmap(len, true);
    for (uint64_t row = 0; row < len; ++row) {
      if (!indices->is_valid(offset + row)) bitmap_set(validity.mutable_data(), row, false);
    }
    c->null_count = count_nulls(validity.data(), 0, len);
    if (c->null_count != 0) c->validity = std::move(validity);
  }
  return ColumnPtr(std::move(c));
}

}  // namespace

void register_rle() { register_encoding("fastlanes.rle", decode_rle); }

}  // namespace oc::format::encodings
