// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief The run ends of a `vortex.runend` node (layout in format/encodings/runend.cpp), shared
/// by its decoder and by evaluation on the compressed form (format/compressed_eval.cpp).
#pragma once

#include <cstdint>
#include <vector>

#include "config/error.hpp"
#include "format/decode.hpp"

namespace oc::format::encodings {

struct RunEnds {
  std::vector<uint64_t> ends;  ///< physical end (exclusive) of each run, strictly ascending
  uint64_t offset = 0;         ///< physical row of logical row 0
};

/// Decodes and checks the run ends of @p node: strictly ascending, none before the offset.
[[nodiscard]] Result<RunEnds> decode_run_ends(const ArrayView& node, DecodeContext& ctx);

}  // namespace oc::format::encodings
