// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief Evaluating a single-column filter on an array tree without decoding it to canonical
/// form, where the root encoding allows.
///
/// | root encoding   | how                                                                  |
/// |-----------------|----------------------------------------------------------------------|
/// | `vortex.dict`   | the predicate once per dictionary value, then mapped through the      |
/// |                 | window's codes (a null code takes the predicate's truth on NULL)      |
/// | `vortex.runend` | once per run value, expanded by the run ends over the window          |
/// | `vortex.constant` | once, replicated                                                    |
/// | `fastlanes.for` | each comparison rewritten into the encoded domain (`x op lit` becomes |
/// |                 | a range test on `x - reference`), run on the child's decoded values   |
/// | `vortex.ext`    | on its storage child, by that child's encoding, with the extension  |
/// |                 | type (a date over FoR compares in FoR's domain)                      |
///
/// dict, runend and constant evaluate the whole tree on their values, so they take any
/// predicate; their values (small) are decoded whatever their encoding. FoR takes trees of
/// integer or temporal comparisons with integer literals, `IS [NOT] NULL`, constants and
/// AND/OR/NOT; anything else there, or any other root encoding, has no compressed path.
///
/// Results equal decoding the window and running `evaluate_truth`, byte for byte.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "config/error.hpp"
#include "format/decode.hpp"
#include "format/expr_bind.hpp"

namespace oc::format {

/// Evaluates @p pred on rows @p window of the array tree @p node (of type @p t, @p len rows)
/// without decoding it to canonical form where the encoding allows.
/// @param pred a filter bound against the one-field struct {"value": t} (pred.columns.size() == 1).
/// @return one Truth byte per window row (values of Truth cast to uint8_t), or nullopt when no
///         compressed path applies at the root (the caller then decodes and evaluates).
///         `Errc::invalid` when @p pred reads more than one column or @p window is not within
///         [0, len); `Errc::corrupt` for malformed nodes, as decoding would report.
[[nodiscard]] Result<std::optional<std::vector<uint8_t>>> evaluate_compressed(
    const BoundExpr& pred, const ArrayView& node, const DTypePtr& t, uint64_t len, RowWindow window,
    DecodeContext& ctx);

}  // namespace oc::format
