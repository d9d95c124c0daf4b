// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief Patches: sparse exceptions laid over a decoded base array.
///
/// Used by fastlanes.bitpacked, vortex.alp, vortex.alprd and vortex.sparse. The owning encoding's
/// metadata embeds a `PatchesMetadata` (format/proto/patches.proto); its children hold, starting
/// at some child index chosen by the encoding:
///   - indices:        `len` unsigned integers of `indices_ptype`, sorted ascending; position in
///                     the array = index - `offset`;
///   - values:         `len` values of the patched array's dtype (nullable as the array is);
///   - chunk_offsets:  optional, `chunk_offsets_len` integers: for each 1024-row chunk
///                     (PATCH_CHUNK_SIZE), the index of its first patch; a lookup accelerator
///                     that a full decode may ignore.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "config/error.hpp"
#include "format/column.hpp"
#include "format/decode.hpp"

namespace oc::pb {
class PatchesMetadata;
}

namespace oc::format {

inline constexpr uint64_t kPatchChunkSize = 1024;

/// Patch positions and values, decoded.
struct DecodedPatches {
  std::vector<uint64_t> positions;  ///< ascending positions within [0, array_len)
  ColumnPtr values;                 ///< one value per position, same order
};

/// Decodes the patch children of @p node starting at @p first_child.
/// @param values_dtype the dtype of the patch values (the patched array's dtype)
/// @param array_len    length of the patched array; positions outside [0, len) are corrupt
/// @return the patches, and through @p children_used how many children they occupied (2 or 3).
[[nodiscard]] Result<DecodedPatches> decode_patches(const ArrayView& node, size_t first_child,
                                                    const pb::PatchesMetadata& meta,
                                                    const DTypePtr& values_dtype,
                                                    uint64_t array_len, DecodeContext& ctx,
                                                    size_t& children_used);

/// The patches at rows @p rows (sorted, unique) of @p all, their positions renumbered as
/// indices into @p rows: what a take of those rows patches.
[[nodiscard]] Result<DecodedPatches> patches_at(const DecodedPatches& all,
                                                std::span<const uint64_t> rows);

/// Writes @p patches over a copy of @p base (same dtype, offset 0 in the result). Fixed-width,
/// bool and string columns are supported; validity of patch values is carried over.
[[nodiscard]] Result<ColumnPtr> apply_patches(const ColumnPtr& base, const DecodedPatches& patches);

}  // namespace oc::format
