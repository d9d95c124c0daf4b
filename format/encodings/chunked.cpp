// SPDX-License-Identifier: Apache-2.0
// vortex.chunked (the array encoding, not the layout): rows split into chunks of one dtype.
//
// - buffers:  none.
// - metadata: empty.
// - children: [chunk_offsets: non-nullable u64, nchunks + 1 rows, non-decreasing, from 0 to
//              len (vortex-data checks the last is len)], then the nchunks chunks; chunk i has
//              chunk_offsets[i + 1] - chunk_offsets[i] rows.
// The chunks are decoded and concatenated into one column.
#include "format/decode.hpp"
#include "format/encodings/registry.hpp"

namespace oc::format::encodings {
namespace {

Result<ColumnPtr> decode_chunked(const ArrayView& node, const DTypePtr& t, uint64_t len,
                                 DecodeContext& ctx) {
  OC_TRY(expect_shape(node, 0, 1, node.children.size()));
  const uint64_t nchunks = node.children.size() - 1;
  OC_ASSIGN_OR_RETURN(
      auto offsets_col,
      ctx.decode(node.children[0], DType::make_primitive(PType::u64, false), nchunks + 1));
  const uint64_t* offsets = offsets_col->values<uint64_t>();
  for (uint64_t i = 0; i < nchunks; ++i) {
    OC_EXPECT(offsets[i] <= offsets[i + 1], corrupt, "chunk offsets decrease at chunk {}", i);
  }
  OC_EXPECT(offsets[nchunks] - offsets[0] == len, corrupt,
            "chunk offsets span {} rows, expected {}", offsets[nchunks] - offsets[0], len);
  OC_EXPECT(offsets[nchunks] == len, corrupt,
            "vortex.chunked has {} chunks whose offsets end at {}, expected the length {}", nchunks,
            offsets[nchunks], len);
  if (nchunks == 0) return make_all_null(t, 0);
  std::vector<ColumnPtr> chunks;
  chunks.reserve(nchunks);
  for (uint64_t i = 0; i < nchunks; ++i) {
    OC_ASSIGN_OR_RETURN(auto chunk,
                        ctx.decode(node.children[i + 1], t, offsets[i + 1] - offsets[i]));
    chunks.push_back(std::move(chunk));
  }
  return concat(chunks);
}

}  // namespace

void register_chunked() { register_encoding("vortex.chunked", decode_chunked); }

}  // namespace oc::format::encodings
