// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief What an encoding accepts: the checks its CPU decoder makes of an array node before it
/// decodes one, exported so that the GPU's fused plan (kernels/fused_plan.cpp) asks the very
/// same question instead of repeating it. Each function is defined in its encoding's unit.
#pragma once

#include <cstdint>

#include "config/error.hpp"
#include "format/array_tree.hpp"
#include "format/decode.hpp"
#include "format/dtype.hpp"
#include "format/proto/bitpacked.pb.h"

namespace oc::format::encodings {

/// fastlanes.bitpacked of @p len rows of @p t (a non-float primitive): one buffer of whole
/// FastLanes blocks of the metadata's bit width (at most the value's) from a row offset below
/// 1024, patches and validity as children. @return the checked metadata.
[[nodiscard]] Result<pb::BitPackedMetadata> accept_bitpacked(const ArrayView& node,
                                                             const DTypePtr& t, uint64_t len,
                                                             DecodeContext& ctx);

/// fastlanes.for of @p t (a non-float primitive): one child, a non-null reference scalar as its
/// metadata. @return the reference as bits of the value's width.
[[nodiscard]] Result<uint64_t> accept_for(const ArrayView& node, const DTypePtr& t);

/// vortex.zigzag of @p t (a signed integer): one child, no metadata. @return the child's dtype,
/// the unsigned integer of the same width.
[[nodiscard]] Result<DTypePtr> accept_zigzag(const ArrayView& node, const DTypePtr& t);

}  // namespace oc::format::encodings
