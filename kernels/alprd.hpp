// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief `vortex.alprd` on the GPU as two fused decodes and one combine: the left parts' codes
/// go through the fused kernel with a dict op over the shifted dictionary (left << right_bit_width)
/// and the left patches as output patches; the right parts through their own fused decode; then
/// every row is left | right. Bit-exact: only integer operations on the float's bits.
///
/// Output layout: len floats (f32 or f64) as their little-endian bits, the left parts' validity.
/// A left code outside the dictionary is corrupt unless a patch or a null covers its row, as in
/// format/encodings/alprd.cpp. @note Untested on GPU hardware so far.
#pragma once

#include "config/error.hpp"
#include "format/buffer.hpp"
#include "format/decode.hpp"
#include "kernels/fused_decode.hpp"
#include "kernels/fused_plan.hpp"

namespace oc::kernels {

struct AlprdPlan {
  FusedPlan left;   ///< u16 codes -> shifted left bits, patched; carries the validity
  FusedPlan right;  ///< the right bits
};

/// Plans @p node, a `vortex.alprd` array of type @p dtype and @p len rows.
/// @return `Errc::unsupported` when a part's chain does not fuse; `Errc::corrupt` as the CPU.
[[nodiscard]] Result<AlprdPlan> build_alprd_plan(const format::ArrayView& node,
                                                 const format::DTypePtr& dtype, uint64_t len,
                                                 format::DecodeContext& ctx);

/// The float bits on the host, through the kernels' own stage code (the reference).
[[nodiscard]] Result<format::Buffer> run_alprd_on_host(const AlprdPlan& plan);

/// The two part decodes on the device; `left.values` holds the floats once `finish` returns.
struct DeviceAlprd {
  DeviceColumn left, right;
  /// Waits for the decode on @p stream and checks both parts' error words.
  [[nodiscard]] Result<void> finish(Stream& stream);
};

/// Queues the two part decodes and the combine on @p stream.
[[nodiscard]] Result<DeviceAlprd> decode_alprd_on_device(const AlprdPlan& plan, Stream& stream);

}  // namespace oc::kernels
