// SPDX-License-Identifier: Apache-2.0
// fastlanes.bitpacked: integers packed W bits each in FastLanes blocks of 1024 values.
//   dtype:     any integer ptype (signed values are packed as their unsigned bits).
//   metadata:  `BitPackedMetadata { uint32 bit_width = 1; uint32 offset = 2;
//               PatchesMetadata patches = 3 }` (format/proto/bitpacked.proto); offset < 1024
//              rows of the first block precede row 0.
//   buffer 0:  ceil((offset + len) / 1024) blocks of 128 x W bytes each, in the transposed
//              block layout of format/encodings/bitpacked.hpp; the last block is zero-padded.
//   children:  [patch indices, patch values, (patch chunk offsets)] when `patches` is set
//              (format/patches.hpp; values have the array's dtype), then an optional validity.
//              Patches hold the values too wide for W; they replace the unpacked rows.
// A slice unpacks only the blocks that hold its rows; a take reads only its rows' blocks, and
// extracts only its rows' bits from a block that holds few of them.
#include "format/encodings/bitpacked.hpp"

#include <algorithm>
#include <cstring>

#include "format/decode.hpp"
#include "format/encodings/accepts.hpp"
#include "format/encodings/registry.hpp"
#include "format/patches.hpp"
#include "format/proto/bitpacked.pb.h"

namespace oc::format::encodings {
namespace {

// @p packed, or a copy of it aligned to T: segment buffers are normally aligned, rarely not.
template <class T>
Buffer aligned_to(const Buffer& packed) {
  return reinterpret_cast<uintptr_t>(packed.data()) % alignof(T) == 0
             ? packed
             : Buffer::copy_of(packed.span());
}

// Unpacks blocks [first, first + count) of @p packed into a fresh buffer, adding @p reference
// (a fastlanes.for parent's, wrapping) to each block while it is in cache.
template <class T>
Buffer unpack_blocks(const Buffer& packed, unsigned width, uint64_t first, uint64_t count,
                     std::optional<uint64_t> reference) {
  const uint64_t values = saturating_mul(count, kFastLanesBlock);
  if (width == 0 && !reference) return Buffer::allocate_array(values, sizeof(T));  // all zeros
  Buffer out = Buffer::allocate_array_for_overwrite(values, sizeof(T));
  T* dst = out.mutable_as<T>();
  if (width == 0) {
    std::fill_n(dst, values, static_cast<T>(*reference));
    return out;
  }
  const size_t words_per_block = packed_block_bytes(width) / sizeof(T);
  const Buffer aligned = aligned_to<T>(packed);
  const T* in = aligned.as<T>();
  for (uint64_t b = 0; b < count; ++b) {
    T* block = dst + b * kFastLanesBlock;
    unpack_block<T>(in + (first + b) * words_per_block, width, block);
    if (reference) {
      const T ref = static_cast<T>(*reference);
      for (unsigned i = 0; i < kFastLanesBlock; ++i) block[i] = static_cast<T>(block[i] + ref);
    }
  }
  return out;
}

// Keeps the patches that fall in @p rows, renumbered from the window's first row.
Result<DecodedPatches> patches_in(const DecodedPatches& all, RowWindow rows) {
  DecodedPatches out;
  std::vector<uint64_t> keep;
  for (size_t i = 0; i < all.positions.size(); ++i) {
    if (all.positions[i] >= rows.begin && all.positions[i] < rows.end) {
      out.positions.push_back(all.positions[i] - rows.begin);
      keep.push_back(i);
    }
  }
  if (keep.size() == all.positions.size()) {
    out.values = all.values;
    return out;
  }
  OC_ASSIGN_OR_RETURN(out.values, take(all.values, keep));
  return out;
}

// A block holding at least this many taken rows is unpacked whole and gathered from: that costs
// about what extracting this many values one by one does, and a list's taken elements come in
// runs of hundreds to a block.
constexpr size_t kUnpackBlockAt = 64;

// Extracts the values at logical rows @p rows (after @p offset leading rows, sorted as a take's
// rows are) into a fresh buffer, block by block.
template <class T>
Buffer unpack_rows(const Buffer& packed, unsigned width, uint64_t offset,
                   std::span<const uint64_t> rows) {
  Buffer out = Buffer::allocate_array(rows.size(), sizeof(T));
  if (width == 0) return out;
  const size_t words_per_block = packed_block_bytes(width) / sizeof(T);
  const Buffer aligned = aligned_to<T>(packed);
  const T* in = aligned.as<T>();
  T* dst = out.mutable_as<T>();
  alignas(64) T block[kFastLanesBlock];
  for (size_t i = 0; i < rows.size();) {
    const uint64_t b = (offset + rows[i]) / kFastLanesBlock;
    size_t j = i + 1;
    while (j < rows.size() && (offset + rows[j]) / kFastLanesBlock == b) ++j;
    const T* words = in + b * words_per_block;
    if (j - i >= kUnpackBlockAt) {
      unpack_block<T>(words, width, block);
      for (size_t k = i; k < j; ++k) dst[k] = block[(offset + rows[k]) % kFastLanesBlock];
    } else {
      for (size_t k = i; k < j; ++k) {
        dst[k] = unpack_one<T>(words, width,
                               static_cast<unsigned>((offset + rows[k]) % kFastLanesBlock));
      }
    }
    i = j;
  }
  return out;
}

}  // namespace

Result<pb::BitPackedMetadata> accept_bitpacked(const ArrayView& node, const DTypePtr& t,
                                               uint64_t len, DecodeContext& ctx) {
  OC_TRY(expect_shape(node, 1, 0, 4));
  const DType& storage = t->storage();
  OC_EXPECT(storage.kind == TypeKind::primitive && !ptype_is_float(storage.ptype), corrupt,
            "fastlanes.bitpacked for {}", t->to_string());
  OC_ASSIGN_OR_RETURN(auto meta,
                      parse_metadata<pb::BitPackedMetadata>(node.metadata, "fastlanes.bitpacked"));
  const size_t value_bytes = ptype_width(storage.ptype);
  const unsigned width = meta.bit_width();
  OC_EXPECT(width <= value_bytes * 8, corrupt, "bit width {} for {}-bit values", width,
            value_bytes * 8);
  OC_EXPECT(meta.offset() < kFastLanesBlock, corrupt, "bitpacked offset {} >= 1024", meta.offset());
  // Bounding the row count first keeps every size computed below far from overflow.
  OC_TRY(ctx.check_alloc(len, value_bytes, "fastlanes.bitpacked"));
  const uint64_t blocks = (len + meta.offset() + kFastLanesBlock - 1) / kFastLanesBlock;
  OC_EXPECT(node.buffers[0].size() == blocks * packed_block_bytes(width), corrupt,
            "bitpacked buffer is {} bytes, expected {} blocks of {}", node.buffers[0].size(),
            blocks, packed_block_bytes(width));
  return meta;
}

namespace {

Result<ColumnPtr> decode_bitpacked(const ArrayView& node, const DTypePtr& t, uint64_t len,
                                   DecodeContext& ctx) {
  OC_ASSIGN_OR_RETURN(auto meta, accept_bitpacked(node, t, len, ctx));
  const DType& storage = t->storage();
  const size_t value_bytes = ptype_width(storage.ptype);
  const unsigned width = meta.bit_width();

  // A slice decode unpacks only the blocks that hold the window's rows.
  const RowWindow rows = ctx.window().value_or(RowWindow{0, len});
  const uint64_t first = (meta.offset() + rows.begin) / kFastLanesBlock;
  const uint64_t count =
      rows.size() == 0 ? 0 : (meta.offset() + rows.end - 1) / kFastLanesBlock + 1 - first;
  // A fastlanes.for parent's reference is added here, unless patches (values before the
  // reference is added) come after the unpacking: the parent adds it then.
  const std::optional<uint64_t> reference =
      meta.has_patches() ? std::nullopt : ctx.take_reference();
  auto c = std::make_shared<Column>();
  c->dtype = t;
  c->length = rows.size();
  // An empty window unpacks no block: its column starts at the (empty) buffer's start.
  c->offset = count == 0 ? 0 : meta.offset() + rows.begin - first * kFastLanesBlock;
  switch (value_bytes) {
    case 1:
      c->buffers.push_back(unpack_blocks<uint8_t>(node.buffers[0], width, first, count, reference));
      break;
    case 2:
      c->buffers.push_back(
          unpack_blocks<uint16_t>(node.buffers[0], width, first, count, reference));
      break;
    case 4:
      c->buffers.push_back(
          unpack_blocks<uint32_t>(node.buffers[0], width, first, count, reference));
      break;
    default:
      c->buffers.push_back(
          unpack_blocks<uint64_t>(node.buffers[0], width, first, count, reference));
      break;
  }

  size_t validity_child = 0;
  DecodedPatches patches;
  if (meta.has_patches()) {
    // Patch children live in their own row space: decode them whole, then keep the window's.
    auto all = ctx.without_window(
        [&] { return decode_patches(node, 0, meta.patches(), t, len, ctx, validity_child); });
    OC_TRY(all);
    OC_ASSIGN_OR_RETURN(patches, patches_in(*all, rows));
  }
  OC_EXPECT(node.children.size() <= validity_child + 1, corrupt,
            "fastlanes.bitpacked has {} children, expected at most {}", node.children.size(),
            validity_child + 1);
  int64_t nulls = 0;
  OC_ASSIGN_OR_RETURN(Buffer validity,
                      decode_validity(node, validity_child, storage.nullable, len, ctx, nulls));
  ColumnPtr out = std::move(c);
  if (!validity.empty()) out = with_validity(out, std::move(validity), t);
  if (!patches.positions.empty()) return apply_patches(out, patches);
  return out;
}

Result<ColumnPtr> take_bitpacked(const ArrayView& node, const DTypePtr& t, uint64_t len,
                                 std::span<const uint64_t> rows, DecodeContext& ctx) {
  OC_ASSIGN_OR_RETURN(auto meta, accept_bitpacked(node, t, len, ctx));
  const DType& storage = t->storage();
  const unsigned width = meta.bit_width();
  auto c = std::make_shared<Column>();
  c->dtype = t;
  c->length = rows.size();
  const Buffer& packed = node.buffers[0];
  // A row's bits lie in its FastLanes block: the blocks of the taken rows are all it reads.
  const uint64_t block_bytes = packed_block_bytes(width);
  for (size_t i = 0; i < rows.size(); ++i) {
    const uint64_t block = (meta.offset() + rows[i]) / kFastLanesBlock;
    if (i == 0 || block != (meta.offset() + rows[i - 1]) / kFastLanesBlock) {
      ctx.need(packed, block * block_bytes, block_bytes);
    }
  }
  switch (ptype_width(storage.ptype)) {
    case 1:
      c->buffers.push_back(unpack_rows<uint8_t>(packed, width, meta.offset(), rows));
      break;
    case 2:
      c->buffers.push_back(unpack_rows<uint16_t>(packed, width, meta.offset(), rows));
      break;
    case 4:
      c->buffers.push_back(unpack_rows<uint32_t>(packed, width, meta.offset(), rows));
      break;
    default:
      c->buffers.push_back(unpack_rows<uint64_t>(packed, width, meta.offset(), rows));
      break;
  }

  size_t validity_child = 0;
  DecodedPatches patches;
  if (meta.has_patches()) {
    OC_ASSIGN_OR_RETURN(auto all,
                        decode_patches(node, 0, meta.patches(), t, len, ctx, validity_child));
    OC_ASSIGN_OR_RETURN(patches, patches_at(all, rows));
  }
  OC_EXPECT(node.children.size() <= validity_child + 1, corrupt,
            "fastlanes.bitpacked has {} children, expected at most {}", node.children.size(),
            validity_child + 1);
  int64_t nulls = 0;
  OC_ASSIGN_OR_RETURN(Buffer validity,
                      take_validity(node, validity_child, storage.nullable, len, rows, ctx, nulls));
  ColumnPtr out = std::move(c);
  if (!validity.empty()) out = with_validity(out, std::move(validity), t);
  if (!patches.positions.empty()) return apply_patches(out, patches);
  return out;
}

}  // namespace

void register_bitpacked() {
  register_encoding("fastlanes.bitpacked", decode_bitpacked, /*window_aware=*/true);
  register_take("fastlanes.bitpacked", take_bitpacked);
}

}  // namespace oc::format::encodings
