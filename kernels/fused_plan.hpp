// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief The host side of a fused GPU decode: turns one flat segment's array tree into a plan
/// that a single kernel launch executes (kernels/fused_decode.hpp), and runs the same plan on
/// the host as a reference.
///
/// Fusable trees are chains of
///
///     vortex.dict(codes, values)   values: any fixed-width primitive array, decoded on the host
///                                  (a dictionary is small) and uploaded once
///     fastlanes.for(child)         the reference becomes a scalar op
///     vortex.alp(encoded)          a scalar op, bit-exact (same multiplication order as the CPU);
///                                  its patches overwrite the decoded floats
///     vortex.decimal_byte_parts    sign-extension of the most significant part to i128 or i256
///     vortex.zigzag(child)         a scalar op
///     vortex.ext(storage)          passes through to its storage
///     fastlanes.bitpacked          the source; its patches are decoded on the host (a few)
///     vortex.primitive             the source
///     vortex.sequence              the source, computed per row
///     vortex.constant              the source, one non-null fixed-width value
///     vortex.runend(ends, values)  the source; ends and values are decoded on the host (one
///                                  entry per run) and each row binary-searches its run
///
/// where only the source (bitpacked or primitive) has nulls: its validity is decoded on the host
/// into an Arrow bitmap that travels with the values (dict lookups skip null rows). A patched
/// row takes its patch value's validity, as on the CPU. Null
/// dictionary values, null patches and null constants are not fused. Anything else is
/// `Errc::unsupported`,
/// and the caller decodes that array on the CPU. Building a plan reads metadata and the small
/// children only; the packed buffer stays a reference to the segment. Output sizes come from the
/// tree (rows x output width), so no device-to-host round trip is needed to size anything.
///
/// Built in every configuration: planning needs no CUDA.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "config/error.hpp"
#include "format/buffer.hpp"
#include "format/decode.hpp"
#include "kernels/fused_stages.hpp"

namespace oc::kernels {

/// One fused decode, with its inputs as host buffers.
struct FusedPlan {
  /// Source, widths, offset and length; the pointer fields are null until bound to buffers.
  FusedParams params;
  format::DTypePtr dtype;  ///< type of the decoded array
  format::Buffer packed;   ///< bitpacked blocks or primitive values (a segment slice)
  std::vector<uint64_t> patch_positions;    ///< packed positions (row + offset), ascending
  std::vector<uint64_t> patch_values;       ///< the patched values' bits
  std::vector<format::Buffer> dict_values;  ///< one per dict op, in op order (innermost first)
  format::Buffer validity;  ///< Arrow bitmap of the decoded rows (bit i = row i); empty: all valid
  int64_t null_count = 0;   ///< nulls in `validity`
  /// The bitmap the ops read (a dict lookup skips its null rows): the source's, with the
  /// source's patches valid. The same buffer as `validity` unless ALP's output patches make
  /// null rows valid, which they do in the output only (format/patches.cpp), as the CPU decodes
  /// ALP's child before patching it.
  format::Buffer source_validity;
  std::vector<uint64_t> out_patch_rows;    ///< ALP: rows whose decoded value is replaced
  std::vector<uint64_t> out_patch_values;  ///< ALP: the replacing values' bits
  std::vector<uint64_t> run_ends;          ///< runend: physical run ends, ascending
  std::vector<uint64_t> run_values;        ///< runend: each run's value bits

  /// Bytes the decode writes: rows x output width.
  [[nodiscard]] uint64_t output_bytes() const noexcept { return params.len * params.out_bytes(); }
  /// Bytes a device decode must upload: packed data, patches, runs and dictionaries.
  [[nodiscard]] uint64_t input_bytes() const noexcept;
  /// The encodings fused, outermost first ("vortex.dict > fastlanes.for > fastlanes.bitpacked").
  std::string description;
};

/// Plans the fused decode of @p node, an array of type @p dtype and @p len rows.
/// @return the plan; `Errc::unsupported` when the tree is not a fusable chain (see the file
/// comment), `Errc::corrupt` when it is malformed, as the CPU decoder would report.
[[nodiscard]] Result<FusedPlan> build_fused_plan(const format::ArrayView& node,
                                                 const format::DTypePtr& dtype, uint64_t len,
                                                 format::DecodeContext& ctx);

/// Points the pointer fields of a copy of `plan.params` at @p plan's host buffers and @p out.
/// @note The result borrows @p plan's buffers: it must not outlive @p plan.
[[nodiscard]] FusedParams bind_host(const FusedPlan& plan, void* out, uint32_t* error);

/// Executes @p plan on the host with the kernel's own tile body (kernels/fused_block.hpp): a
/// small grid of blocks striding over the tiles, each block's threads phase by phase between
/// its barriers. The reference for the device decode, and for the plan.
/// @return `plan.output_bytes()` bytes of decoded values; `Errc::corrupt` for a dict code out of
/// range; `Errc::invalid` when the tile body ran a phase without a barrier before it.
[[nodiscard]] Result<format::Buffer> run_plan_on_host(const FusedPlan& plan);

/// Executes @p plans as one batched launch would (kernels/fused_block.hpp's batch mapping of
/// block-tiles to plans), on the host.
/// @return one buffer per plan, each equal to `run_plan_on_host` of that plan; the first
/// plan's error otherwise.
[[nodiscard]] Result<std::vector<format::Buffer>> run_batch_on_host(
    std::span<const FusedPlan* const> plans);

}  // namespace oc::kernels
