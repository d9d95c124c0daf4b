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
// Each frame must inflate to exactly its declared `uncompressed_size`. Before anything is
// allocated, each declared size is checked against what its frame's bytes can inflate to
// (zstd_max_inflated) and the declared total against the decode limit, so a decompression bomb
// fails with Errc::corrupt instead of allocating.
//
// A take inflates only the frames that hold its rows' values (the compact writer's frames hold
// 8192 values each), found from the frames' `n_values` and the validity; frames that do not
// count their values (older files) make it inflate them all.
#include <zstd.h>

#include <cstring>
#include <memory>

#include "format/decode.hpp"
#include "format/encodings/integers.hpp"
#include "format/encodings/registry.hpp"
#include "format/proto/zstd.pb.h"
#include "format/zstd_bound.hpp"

namespace oc::format::encodings {
namespace {

struct FreeDCtx {
  void operator()(ZSTD_DCtx* p) const noexcept { ZSTD_freeDCtx(p); }
};
struct FreeDDict {
  void operator()(ZSTD_DDict* p) const noexcept { ZSTD_freeDDict(p); }
};

// The decompression state of one node: context and optional dictionary.
struct Inflater {
  std::unique_ptr<ZSTD_DCtx, FreeDCtx> dctx;
  std::unique_ptr<ZSTD_DDict, FreeDDict> dict;
  size_t first_frame = 0;  // buffer index of frame 0: 1 when a dictionary leads

  // Inflates frame @p f of @p node into @p dst, exactly its declared size.
  Result<void> frame(const ArrayView& node, const pb::ZstdMetadata& meta, int f,
                     uint8_t* dst) const {
    const uint64_t expected = meta.frames(f).uncompressed_size();
    if (expected == 0) return {};
    const Buffer& src = node.buffers[first_frame + static_cast<size_t>(f)];
    const size_t n = dict ? ZSTD_decompress_usingDDict(dctx.get(), dst, expected, src.data(),
                                                       src.size(), dict.get())
                          : ZSTD_decompressDCtx(dctx.get(), dst, expected, src.data(), src.size());
    OC_EXPECT(!ZSTD_isError(n), corrupt, "zstd frame {} (declared {} bytes) fails: {}", f, expected,
              ZSTD_getErrorName(n));
    OC_EXPECT(n == expected, corrupt, "zstd frame {} inflates to {} bytes, declared {}", f, n,
              expected);
    return {};
  }
};

// Checks the buffers against the metadata and sets up decompression.
Result<Inflater> inflater_for(const ArrayView& node, const pb::ZstdMetadata& meta) {
  Inflater in;
  in.first_frame = meta.dictionary_size() != 0 ? 1 : 0;
  OC_EXPECT(node.buffers.size() == in.first_frame + static_cast<size_t>(meta.frames_size()),
            corrupt, "vortex.zstd has {} buffers for {} frames{}", node.buffers.size(),
            meta.frames_size(), in.first_frame ? " and a dictionary" : "");
  for (int f = 0; f < meta.frames_size(); ++f) {
    const uint64_t bytes = node.buffers[in.first_frame + static_cast<size_t>(f)].size();
    OC_EXPECT(meta.frames(f).uncompressed_size() <= zstd_max_inflated(bytes), corrupt,
              "zstd frame {} of {} bytes cannot inflate to its declared {} bytes", f, bytes,
              meta.frames(f).uncompressed_size());
  }
  in.dctx.reset(ZSTD_createDCtx());
  OC_EXPECT(in.dctx != nullptr, out_of_memory, "cannot create a zstd decompression context");
  if (in.first_frame) {
    const Buffer& d = node.buffers[0];
    OC_EXPECT(d.size() == meta.dictionary_size(), corrupt,
              "zstd dictionary buffer is {} bytes, metadata says {}", d.size(),
              meta.dictionary_size());
    in.dict.reset(ZSTD_createDDict(d.data(), d.size()));
    OC_EXPECT(in.dict != nullptr, corrupt, "zstd dictionary of {} bytes is invalid", d.size());
  }
  return in;
}

// Inflates every frame of @p node into one buffer of the declared total size.
Result<Buffer> inflate_frames(const ArrayView& node, const pb::ZstdMetadata& meta,
                              DecodeContext& ctx) {
  OC_ASSIGN_OR_RETURN(Inflater in, inflater_for(node, meta));
  uint64_t total = 0;
  for (const auto& frame : meta.frames()) {
    OC_EXPECT(!__builtin_add_overflow(total, frame.uncompressed_size(), &total), corrupt,
              "zstd frame sizes overflow");
  }
  OC_TRY(ctx.check_alloc(total, "zstd frames"));
  Buffer out = Buffer::allocate_for_overwrite(total);  // every frame fills its part, or fails
  uint64_t pos = 0;
  for (int f = 0; f < meta.frames_size(); ++f) {
    OC_TRY(in.frame(node, meta, f, out.mutable_data() + pos));
    pos += meta.frames(f).uncompressed_size();
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
  OC_TRY(ctx.check_alloc(
      saturating_add(value_bytes, saturating_mul(saturating_add(len, 1), sizeof(int32_t))),
      "zstd strings"));
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

// Rows @p rows of the node: the frames holding the taken valid rows' values are inflated, once
// each, and the values picked out of them (strings by walking the frame's length prefixes).
Result<ColumnPtr> take_zstd(const ArrayView& node, const DTypePtr& t, uint64_t len,
                            std::span<const uint64_t> rows, DecodeContext& ctx) {
  const DType& st = t->storage();
  const bool is_string = st.kind == TypeKind::utf8 || st.kind == TypeKind::binary;
  OC_EXPECT(is_string || st.kind == TypeKind::primitive, corrupt, "vortex.zstd for {}",
            t->to_string());
  OC_EXPECT(node.children.size() <= 1, corrupt, "vortex.zstd has {} children, expected 0..1",
            node.children.size());
  OC_ASSIGN_OR_RETURN(auto meta, parse_metadata<pb::ZstdMetadata>(node.metadata, "vortex.zstd"));
  // Where each frame's values start among the stored (valid) values.
  std::vector<uint64_t> starts;
  uint64_t stored = 0;
  bool counted = true;
  for (const auto& frame : meta.frames()) {
    if (frame.n_values() == 0 && frame.uncompressed_size() != 0) counted = false;
    starts.push_back(stored);
    OC_EXPECT(!__builtin_add_overflow(stored, frame.n_values(), &stored), corrupt,
              "zstd frame value counts overflow");
  }
  if (!counted) {  // frames that do not say how many values they hold: all of them, then gather
    for (const Buffer& b : node.buffers) ctx.need(b);
    OC_ASSIGN_OR_RETURN(ColumnPtr all, decode_zstd(node, t, len, ctx));
    return take(all, rows);
  }
  int64_t nulls = 0;
  OC_ASSIGN_OR_RETURN(Buffer validity, decode_validity(node, 0, st.nullable, len, ctx, nulls));
  OC_EXPECT(stored == len - static_cast<uint64_t>(nulls), corrupt,
            "vortex.zstd frames hold {} values for {} valid rows", stored,
            len - static_cast<uint64_t>(nulls));
  const size_t first_frame = meta.dictionary_size() != 0 ? 1 : 0;
  OC_EXPECT(node.buffers.size() == first_frame + starts.size(), corrupt,
            "vortex.zstd has {} buffers for {} frames{}", node.buffers.size(), starts.size(),
            first_frame ? " and a dictionary" : "");

  // Each taken row's value and frame (rows are sorted, so both only grow); nulls have none.
  constexpr size_t kNone = SIZE_MAX;
  std::vector<uint64_t> value_of(rows.size());
  std::vector<size_t> frame_of(rows.size(), kNone);
  Buffer out_validity;
  int64_t out_nulls = 0;
  if (!validity.empty()) out_validity = Buffer::allocate((rows.size() + 7) / 8);
  uint64_t scanned = 0, nulls_before = 0;
  size_t f = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (!validity.empty()) {
      nulls_before +=
          static_cast<uint64_t>(count_nulls(validity.data(), scanned, rows[i] - scanned));
      scanned = rows[i];
      if (!bitmap_get(validity.data(), rows[i])) {
        ++out_nulls;
        continue;
      }
      bitmap_set(out_validity.mutable_data(), i, true);
    }
    value_of[i] = rows[i] - nulls_before;
    while (starts[f] + meta.frames(static_cast<int>(f)).n_values() <= value_of[i]) ++f;
    frame_of[i] = f;
  }
  if (ctx.reads_in_part()) {  // name every byte first, so one round fetches them all
    if (first_frame) ctx.need(node.buffers[0]);
    for (size_t i = 0; i < rows.size(); ++i) {
      if (frame_of[i] != kNone && (i == 0 || frame_of[i] != frame_of[i - 1])) {
        ctx.need(node.buffers[first_frame + frame_of[i]]);
      }
    }
  }
  OC_ASSIGN_OR_RETURN(Inflater in, inflater_for(node, meta));

  const size_t width = is_string ? 0 : ptype_width(st.ptype);
  Buffer values;  // primitive values, or string offsets
  std::string bytes;
  if (is_string) {
    OC_TRY(ctx.check_alloc(rows.size() + 1, sizeof(int32_t), "zstd take offsets"));
    values = Buffer::allocate_array_for_overwrite(rows.size() + 1, sizeof(int32_t));
  } else {
    OC_TRY(ctx.check_alloc(rows.size(), width, "zstd take"));
    values = Buffer::allocate_array(rows.size(), width);
  }
  std::vector<uint8_t> frame;
  size_t inflated = kNone;
  uint64_t cursor_value = 0, cursor_byte = 0;  // string walk within the inflated frame
  for (size_t i = 0; i < rows.size(); ++i) {
    if (is_string) values.mutable_as<int32_t>()[i] = static_cast<int32_t>(bytes.size());
    const size_t fi = frame_of[i];
    if (fi == kNone) continue;
    const auto& fm = meta.frames(static_cast<int>(fi));
    if (fi != inflated) {
      OC_TRY(ctx.check_alloc(fm.uncompressed_size(), "zstd frame"));
      frame.resize(fm.uncompressed_size());
      OC_TRY(in.frame(node, meta, static_cast<int>(fi), frame.data()));
      inflated = fi;
      cursor_value = 0;
      cursor_byte = 0;
      if (!is_string) {
        OC_EXPECT(frame.size() == saturating_mul(fm.n_values(), width), corrupt,
                  "zstd frame {} holds {} bytes, expected {} values of {} bytes", fi, frame.size(),
                  fm.n_values(), width);
      }
    }
    const uint64_t k = value_of[i] - starts[fi];  // the value's index in its frame
    if (!is_string) {
      std::memcpy(values.mutable_data() + i * width, frame.data() + k * width, width);
      continue;
    }
    // Frames hold per value a u32 LE length then the bytes: walk to value k.
    for (;; ++cursor_value) {
      OC_EXPECT(frame.size() - cursor_byte >= sizeof(uint32_t), corrupt,
                "zstd frame {} ends before its value {}'s length", fi, cursor_value);
      const uint32_t size = load_le<uint32_t>(frame.data() + cursor_byte);
      OC_EXPECT(size <= frame.size() - cursor_byte - sizeof(uint32_t), corrupt,
                "zstd frame {} value {} claims {} bytes past its end", fi, cursor_value, size);
      if (cursor_value == k) {
        OC_EXPECT(bytes.size() + size <= INT32_MAX, unsupported,
                  "zstd take of {} bytes exceeds Arrow's 2 GiB i32 offsets", bytes.size() + size);
        bytes.append(reinterpret_cast<const char*>(frame.data() + cursor_byte + sizeof(uint32_t)),
                     size);
        break;
      }
      cursor_byte += sizeof(uint32_t) + size;
    }
  }
  auto c = std::make_shared<Column>();
  c->dtype = t;
  c->length = rows.size();
  if (is_string) {
    values.mutable_as<int32_t>()[rows.size()] = static_cast<int32_t>(bytes.size());
    c->buffers.push_back(std::move(values));
    c->buffers.push_back(
        Buffer::copy_of({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()}));
  } else {
    c->buffers.push_back(std::move(values));
  }
  c->validity = std::move(out_validity);
  c->null_count = out_nulls;
  return ColumnPtr(std::move(c));
}

}  // namespace

void register_zstd() {
  register_encoding("vortex.zstd", decode_zstd);
  register_take("vortex.zstd", take_zstd);
}

}  // namespace oc::format::encodings
