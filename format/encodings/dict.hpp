// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief The checked shape of a `vortex.dict` array node (layout in format/encodings/dict.cpp),
/// shared by its decoder and by evaluation on the compressed form (format/compressed_eval.cpp).
#pragma once

#include <cstdint>

#include "config/error.hpp"
#include "format/decode.hpp"

namespace oc::format::encodings {

struct DictShape {
  DTypePtr codes_t;         ///< unsigned integers, nullable iff the codes may be null
  uint64_t values_len = 0;  ///< rows of the values child
};

/// Parses the metadata of @p node, a dictionary of type @p t; `Errc::corrupt` when it is malformed.
[[nodiscard]] Result<DictShape> parse_dict(const ArrayView& node, const DTypePtr& t);

}  // namespace oc::format::encodings
