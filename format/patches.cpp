// SPDX-License-Identifier: Apache-2.0
// Patches (layout in format/patches.hpp). Children of the owning node, from `first_child`:
//   indices        `len` x indices_ptype (unsigned, non-nullable), strictly ascending;
//   values         `len` x the patched dtype;
//   chunk_offsets  present iff `chunk_offsets_ptype` is set: `chunk_offsets_len` x that ptype,
//                  non-nullable. Decoded only to check its dtype and length, as vortex-data does
//                  (a full decode visits every patch anyway).
// A patches metadata with no patches is corrupt: vortex-data refuses empty patch indices.
// Array position of patch k = indices[k] - offset; every position must lie in [0, array_len).
#include "format/patches.hpp"

#include <algorithm>
#include <cstring>

#include "format/proto/patches.pb.h"

namespace oc::format {
namespace {

// Validity of the patched result: the base's, with each patched row taking its value's validity.
// Empty when every row is valid.
Buffer patched_validity(const Column& base, const DecodedPatches& patches) {
  if (base.null_count == 0 && patches.values->null_count == 0) return Buffer();
  Buffer bits = make_bitmap(base.length, true);
  uint8_t* out = bits.mutable_data();
  if (base.null_count != 0) {
    for (uint64_t i = 0; i < base.length; ++i) {
      if (!base.is_valid(i)) bitmap_set(out, i, false);
    }
  }
  for (size_t k = 0; k < patches.positions.size(); ++k) {
    bitmap_set(out, patches.positions[k], patches.values->is_valid(k));
  }
  return bits;
}

}  // namespace

Result<DecodedPatches> decode_patches(const ArrayView& node, size_t first_child,
                                      const pb::PatchesMetadata& meta, const DTypePtr& values_dtype,
                                      uint64_t array_len, DecodeContext& ctx,
                                      size_t& children_used) {
  OC_ASSIGN_OR_RETURN(PType index_ptype, ptype_from(meta.indices_ptype()));
  OC_EXPECT(!ptype_is_float(index_ptype) && !ptype_is_signed(index_ptype), corrupt,
            "patch indices must be unsigned integers, got {}", ptype_name(index_ptype));
  const bool has_chunk_offsets = meta.has_chunk_offsets_ptype();
  children_used = has_chunk_offsets ? 3 : 2;
  OC_EXPECT(first_child + children_used <= node.children.size(), corrupt,
            "{} has {} children, patches need {} from child {}", node.encoding,
            node.children.size(), children_used, first_child);
  const uint64_t len = meta.len();
  OC_EXPECT(len > 0, corrupt, "{} has patches metadata with no patches", node.encoding);
  OC_EXPECT(len <= array_len, corrupt, "{} patches for an array of {} rows", len, array_len);
  OC_TRY(ctx.check_alloc(len, sizeof(uint64_t), "patch indices"));

  OC_ASSIGN_OR_RETURN(
      ColumnPtr indices,
      ctx.decode(node.children[first_child], DType::make_primitive(index_ptype, false), len));
  DecodedPatches out;
  out.positions.resize(len);
  const uint64_t offset = meta.offset();
  for (uint64_t k = 0; k < len; ++k) {
    const uint64_t index = unsigned_at(*indices, k);
    OC_EXPECT(index >= offset && index - offset < array_len, corrupt,
              "patch index {} with offset {} is outside an array of {} rows", index, offset,
              array_len);
    const uint64_t position = index - offset;
    OC_EXPECT(k == 0 || position > out.positions[k - 1], corrupt,
              "patch indices are not strictly ascending at patch {}", k);
    out.positions[k] = position;
  }
  OC_ASSIGN_OR_RETURN(out.values, ctx.decode(node.children[first_child + 1], values_dtype, len));
  if (has_chunk_offsets) {
    OC_ASSIGN_OR_RETURN(PType chunk_ptype, ptype_from(meta.chunk_offsets_ptype()));
    const uint64_t chunks = meta.chunk_offsets_len();
    OC_TRY(ctx.check_alloc(chunks, ptype_width(chunk_ptype), "patch chunk offsets"));
    auto offsets = ctx.decode(node.children[first_child + 2],
                              DType::make_primitive(chunk_ptype, false), chunks);
    if (!offsets.ok()) {
      return std::move(offsets.error())
          .with_context(fmt::format("{} patch chunk offsets ({} x {})", node.encoding, chunks,
                                    ptype_name(chunk_ptype)));
    }
  }
  return out;
}

Result<ColumnPtr> apply_patches(const ColumnPtr& base, const DecodedPatches& patches) {
  const DType& storage = base->dtype->storage();
  const ColumnPtr& values = patches.values;
  OC_EXPECT(values->length == patches.positions.size(), invalid, "{} patch values for {} positions",
            values->length, patches.positions.size());
  OC_EXPECT(values->dtype->storage().kind == storage.kind &&
                fixed_width_of(*values->dtype) == fixed_width_of(*base->dtype),
            invalid, "patch values of {} cannot patch {}", values->dtype->to_string(),
            base->dtype->to_string());
  for (uint64_t p : patches.positions) {
    OC_EXPECT(p < base->length, invalid, "patch position {} beyond {} rows", p, base->length);
  }
  if (patches.positions.empty()) return base;

  const size_t width = fixed_width_of(*base->dtype);
  if (width != 0 || storage.kind == TypeKind::boolean) {
    auto out = std::make_shared<Column>();
    out->dtype = base->dtype;
    out->length = base->length;
    if (width != 0) {
      Buffer data = Buffer::allocate_array(base->length, width);
      std::memcpy(data.mutable_data(), base->buffers[0].data() + base->offset * width, data.size());
      const uint8_t* src = values->buffers[0].data() + values->offset * width;
      for (size_t k = 0; k < patches.positions.size(); ++k) {
        std::memcpy(data.mutable_data() + patches.positions[k] * width, src + k * width, width);
      }
      out->buffers.push_back(std::move(data));
    } else {
      Buffer bits = make_bitmap(base->length, false);
      const uint8_t* in = base->buffers[0].data();
      for (uint64_t i = 0; i < base->length; ++i) {
        if (bitmap_get(in, base->offset + i)) bitmap_set(bits.mutable_data(), i, true);
      }
      const uint8_t* patch_bits = values->buffers[0].data();
      for (size_t k = 0; k < patches.positions.size(); ++k) {
        bitmap_set(bits.mutable_data(), patches.positions[k],
                   bitmap_get(patch_bits, values->offset + k));
      }
      out->buffers.push_back(std::move(bits));
    }
    out->validity = patched_validity(*base, patches);
    out->null_count = out->validity.empty() ? 0 : count_nulls(out->validity.data(), 0, out->length);
    return ColumnPtr(std::move(out));
  }

  // Other types: gather from [base rows..., patch values...], each patched row from its value.
  OC_EXPECT(storage.kind == TypeKind::utf8 || storage.kind == TypeKind::binary, unsupported,
            "patching {} columns", base->dtype->to_string());
  auto retyped = std::make_shared<Column>(*values);
  retyped->dtype = base->dtype;  // concat wants one dtype; the storage kinds already agree
  std::vector<uint64_t> gather(base->length);
  for (uint64_t i = 0; i < base->length; ++i) gather[i] = i;
  for (size_t k = 0; k < patches.positions.size(); ++k)
    gather[patches.positions[k]] = base->length + k;
  const ColumnPtr parts[] = {base, std::move(retyped)};
  OC_ASSIGN_OR_RETURN(ColumnPtr both, concat(parts));
  return take(both, gather);
}

Result<DecodedPatches> patches_at(const DecodedPatches& all, std::span<const uint64_t> rows) {
  DecodedPatches out;
  std::vector<uint64_t> keep;
  for (size_t i = 0; i < rows.size(); ++i) {
    auto it = std::lower_bound(all.positions.begin(), all.positions.end(), rows[i]);
    if (it != all.positions.end() && *it == rows[i]) {
      out.positions.push_back(i);
      keep.push_back(static_cast<uint64_t>(it - all.positions.begin()));
    }
  }
  OC_ASSIGN_OR_RETURN(out.values, take(all.values, keep));
  return out;
}

}  // namespace oc::format
