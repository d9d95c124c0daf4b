// SPDX-License-Identifier: Apache-2.0
// vortex.zstd: primitive, utf8 or binary values compressed as zstd frames (the compact writer's
// choice for strings and binary).
//
//   metadata: ZstdMetadata { dictionary_size = 1, repeated frames = 2 { uncompressed_size = 1,
//             n_values = 2 } } (format/proto/zstd.proto)
//   buffers:  [dictionary (only when dictionary_size != 0, exactly that many bytes),
//              frame_0, ..., frame_{m-1}] with one frame per `frames` entry
//   children: [validity] (optional; a Bool array of len rows)
//
// Only the valid rows are stored. The frames decompress, in order, to one stream:
//   primitive:     the valid values back to back, little endian
//   utf8, binary:  per valid value a u32 LE byte length followed by the value's bytes
// Each frame holds whole values (`n_values` of them; 0 in older primitive-only files). A full
// decode inflates every frame, so it checks the stream as a whole: exactly as many values as
// valid rows, and no bytes left over.
//
// Each frame must inflate to exactly its declared `uncompressed_size`; the declared total is
// checked against the decode limit before anything is allocated, so a decompression bomb fails
// with Errc::corrupt instead of allocating.
#include <zstd.h>

#include <cstring>
#include <memory>

#include "format/decode.hpp"
#include "format/encodings/integers.hpp"
#include "format/encodings/registry.hpp"
#include "format/proto/zstd.pb.h"

namespace oc::format::encodings {
namespace {

struct FreeDCtx {
  void operator()(ZSTD_DCtx* p) const noexcept { ZSTD_freeDCtx(p); }
};
struct FreeDDict {
  void operator()(ZSTD_DDict* p) const noexcept { ZSTD_freeDDict(p); }
};

// Inflates every frame of @p node into one buffer of the declared total size.
Result<Buffer> inflate_frames(const ArrayView& node, const pb::ZstdMetadata& meta,
                              DecodeContext& ctx) {
  const size_t first_frame = meta.dictionary_size() != 0 ? 1 : 0;
  OC_EXPECT(node.buffers.size() == first_frame + static_cast<size_t>(meta.frames_size()), corrupt,
            "vortex.zstd has {} buffers for {} frames{}", node.buffers.size(), meta.frames_size(),
            first_frame ? " and a dictionary" : "");
  uint64_t total = 0;
  for (const auto& frame : meta.frames()) {
    OC_EXPECT(!__builtin_add_overflow(total, frame.uncompressed_size(), &total), corrupt,
              "zstd frame sizes overflow");
  }
  OC_TRY(ctx.check_alloc(total, "zstd frames"));
  Buffer out = Buffer::allocate_for_overwrite(total);  // every frame fills its part, or fails
  if (total == 0) return out;

  std::unique_ptr<ZSTD_DCtx, FreeDCtx> dctx(ZSTD_createDCtx());
  OC_EXPECT(dctx != nullptr, out_of_memory, "cannot create a zstd decompression context");
  std::unique_ptr<ZSTD_DDict, FreeDDict> dict;
  if (first_frame) {
    const Buffer& d = node.buffers[0];
    OC_EXPECT(d.size() == meta.dictionary_size(), corrupt,
              "zstd dictionary buffer is {} bytes, metadata says {}", d.size(),
              meta.dictionary_size());
    dict.reset(ZSTD_createDDict(d.data(), d.size()));
    OC_EXPECT(dict != nullptr, corrupt, "zstd dictionary of {} bytes is invalid", d.size());
  }
  uint64_t pos = 0;
  for (int f = 0; f < meta.frames_size(); ++f) {
    const uint64_t expected = meta.frames(f).uncompressed_size();
    const Buffer& src = node.buffers[first_frame + static_cast<size_t>(f)];
    const size_t n = dict ? ZSTD_decompress_usingDDict(dctx.get(), out.mutable_data() + pos,
                                                       expected, src.data(), src.size(), dict.get())
                          : ZSTD_decompressDCtx(dctx.get(), out.mutable_data() + pos, expected,
                                                src.data(), src.size());
    OC_EXPECT(!ZSTD_isError(n), corrupt, "zstd frame {} (declared {} bytes) fails: {}", f, expected,
              ZSTD_getErrorName(n));
    OC_EXPECT(n == expected, corrupt, "zstd frame {} inflates to {} bytes, declared {}", f, n,
              expected);
    pos += expected;
  }
  return out;
}

// Spreads the packed values (@p width bytes each) over the valid rows of @p validity.
Buffer scatter_primitives(const Buffer& packed, size_t width, uint64_t len,
                          const Buffer& validity) {
  if (validity.empty()) return packed;
  Buffer values = Buffer::allocate_array(len, width);
  const uint8_t* src = packed.data();
  for (uint64_t i = 0; i < len; ++i) {
    if (!bitmap_get(validity.data(), i)) continue;
    std::memcpy(values.mutable_data() + i * width, src, width);
    src += width;
  }
  return values;
}

// Splits the length-prefixed value stream over the valid rows into Arrow offsets and bytes.
Result<std::vector<Buffer>> split_strings(const Buffer& stream, uint64_t len, uint64_t num_valid,
                                          const Buffer& validity, DecodeContext& ctx) {
  constexpr size_t kPrefix = sizeof(uint32_t);
  OC_EXPECT(num_valid <= stream.size() / kPrefix, corrupt,
            "zstd stream of {} bytes cannot hold {} length prefixes", stream.size(), num_valid);
  const uint64_t value_bytes = stream.size() - num_valid * kPrefix;
  OC_EXPECT(value_bytes <= INT32_MAX, unsupported,
            "zstd string column of {} bytes exceeds Arrow's 2 GiB i32 offsets", value_bytes);
  OC_TRY(ctx.check_alloc(saturating_add(value_bytes, saturating_mul(saturating_add(len, 1), sizeof(int32_t))), "zstd strings"));
  // Every offset is written, and every byte once the stream checks out (the last check).
  Buffer offsets = Buffer::allocate_array_for_overwrite(len + 1, sizeof(int32_t));
  Buffer bytes = Buffer::allocate_for_overwrite(value_bytes);
  int32_t* out_offsets = offsets.mutable_as<int32_t>();
  uint64_t in = 0;
  uint64_t pos = 0;
  for (uint64_t i = 0; i < len; ++i) {
    out_offsets[i] = static_cast<int32_t>(pos);
    if (!validity.empty() && !bitmap_get(validity.data(), i)) continue;
    OC_EXPECT(stream.size() - in >= kPrefix, corrupt, "zstd stream ends before row {}'s length", i);
    const uint32_t size = load_le<uint32_t>(stream.data() + in);
    in += kPrefix;
    OC_EXPECT(size <= stream.size() - in && size <= value_bytes - pos, corrupt,
              "zstd row {} claims {} bytes past the end of the stream", i, size);
    if (size != 0) std::memcpy(bytes.mutable_data() + pos, stream.data() + in, size);
    in += size;
    pos += size;
  }
  out_offsets[len] = static_cast<int32_t>(pos);
  OC_EXPECT(in == stream.size(), corrupt, "zstd stream has {} bytes after its {} values",
            stream.size() - in, num_valid);
  std::vector<Buffer> out;
  out.push_back(std::move(offsets));
  out.push_back(std::move(bytes));
  return out;
}

Result<ColumnPtr> decode_zstd(const ArrayView& node, const DTypePtr& t, uint64_t len,
                              DecodeContext& ctx) {
  const DType& st = t->storage();
  const bool is_string = st.kind == TypeKind::utf8 || st.kind == TypeKind::binary;
  OC_EXPECT(is_string || st.kind == TypeKind::primitive, corrupt, "vortex.zstd for {}",
            t->to_string());
  OC_EXPECT(node.children.size() <= 1, corrupt, "vortex.zstd has {} children, expected 0..1",
            node.children.size());
  OC_ASSIGN_OR_RETURN(auto meta, parse_metadata<pb::ZstdMetadata>(node.metadata, "vortex.zstd"));

  int64_t nulls = 0;
  OC_ASSIGN_OR_RETURN(Buffer validity, decode_validity(node, 0, st.nullable, len, ctx, nulls));
  const uint64_t num_valid = len - static_cast<uint64_t>(nulls);
  OC_ASSIGN_OR_RETURN(Buffer stream, inflate_frames(node, meta, ctx));

  auto c = std::make_shared<Column>();
  c->dtype = t;
  c->length = len;
  if (is_string) {
    OC_ASSIGN_OR_RETURN(c->buffers, split_strings(stream, len, num_valid, validity, ctx));
  } else {
    const size_t width = ptype_width(st.ptype);
    OC_EXPECT(stream.size() == saturating_mul(num_valid, width), corrupt,
              "zstd frames hold {} bytes, expected {} values of {} bytes", stream.size(), num_valid,
              width);
    OC_TRY(ctx.check_alloc(len, width, "zstd values"));
    c->buffers.push_back(scatter_primitives(stream, width, len, validity));
  }
  c->validity = std::move(validity);
  c->null_count = nulls;
  return ColumnPtr(std::move(c));
}

}  // namespace

void register_zstd() { register_encoding("vortex.zstd", decode_zstd); }

}  // namespace oc::format::encodings
