// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief Pruning: which rows a filter can skip because statistics prove they hold no match.
///
/// Statistics come from the file footer (one zone spanning the file) and from `vortex.zoned`
/// and legacy `vortex.stats` zone maps. For every zone each filter node gets three flags: can
/// it be TRUE, FALSE or NULL on some row of the zone. Leaves derive them from min, max,
/// null_count and nan_count; NOT swaps TRUE and FALSE; AND and OR combine them. A zone is
/// skipped only where the root cannot be TRUE. Pruning is always safe:
/// - a missing statistic (absent field, null entry, inexact file statistic) means "anything";
/// - min is used only as a lower bound and max only as an upper bound (every leaf tests
///   `min < x`, `min <= x`, `max > x` or `max >= x`), so a truncated string min (a prefix) is
///   fine and a truncated string max is replaced by its successor (the prefix with its last
///   byte incremented), an upper bound whether or not the writer already rounded it up;
/// - floats: min and max skip NaN, so a zone that may hold NaN may also make `!=` TRUE and
///   every other comparison FALSE;
/// - comparisons on the bounds use the evaluator's own semantics (format/expr_eval.hpp), so the
///   stats and the rows can never disagree about ordering.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "config/error.hpp"
#include "format/column.hpp"
#include "format/decode.hpp"
#include "format/expr_bind.hpp"
#include "format/layout_reader.hpp"

namespace oc::format {

/// Statistics of one column over consecutive zones. Absent statistics are nullptr.
struct ColumnZones {
  std::vector<uint64_t> starts;     ///< zone i covers rows [starts[i], starts[i + 1])
  ColumnPtr min;                    ///< per zone, the column's type: a lower bound
  ColumnPtr max;                    ///< per zone, the column's type: an upper bound
  std::vector<int64_t> null_count;  ///< per zone, -1 when unknown
  std::vector<int64_t> nan_count;   ///< per zone, -1 when unknown (floats)
};

/// The zone maps of the column read by @p reader (every zoned/stats layout at or below it,
/// outermost first, rows relative to the reader); nullopt when it has none that can prune.
[[nodiscard]] Result<std::optional<ColumnZones>> column_zones(LayoutReader& reader);

/// File statistics @p s of a column of type @p t and @p rows rows, as one zone.
[[nodiscard]] Result<std::optional<ColumnZones>> file_zone(const ArrayStatsView& s,
                                                           const DTypePtr& t, uint64_t rows);

struct PrunePlan {
  std::vector<RowWindow> keep;  ///< sorted, disjoint: the rows that may match
  uint64_t zones_total = 0;     ///< zone pieces of [begin, end) considered
  uint64_t zones_pruned = 0;    ///< of those, pieces proved to hold no match
};

/// The rows of [begin, end) where @p e may be TRUE. @p zones has one entry per bound column of
/// @p e (nullopt: no statistics). Zones of different columns need not align: the range is cut
/// at every zone boundary of every column and each piece is judged on its own.
[[nodiscard]] Result<PrunePlan> prune(const BoundExpr& e,
                                      std::span<const std::optional<ColumnZones>> zones,
                                      uint64_t begin, uint64_t end);

}  // namespace oc::format
