// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief Sharded scans: a dataset cut into units of rows, shuffled per epoch and dealt to
/// ranks and data-loader workers, so that every row is read by exactly one reader per epoch.
///
/// @code
///   OC_ASSIGN_OR_RETURN(auto units, file_units(*file, 0));
///   ShardSpec spec{.rank = 1, .world_size = 2, .shuffle = true, .seed = 7, .epoch = 3};
///   std::vector<Unit> mine = shard_units(units, spec);   // this rank's units, in reading order
///   OC_ASSIGN_OR_RETURN(auto scan, scan_units(file, {.columns = {"tokens"}}, mine, {}));
///   // scan->position() after each batch says where a resumed scan would start.
/// @endcode
///
/// The plan is a pure function of the units and the spec, so every rank and worker computes
/// its own share without talking to the others, and a resumed reader recomputes the same one.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "config/defaults.hpp"
#include "config/error.hpp"
#include "format/reader.hpp"

namespace oc::format {

/// Rows [begin, end) of file number `file` of a dataset.
struct Unit {
  uint32_t file = 0;
  uint64_t begin = 0, end = 0;
  friend bool operator==(const Unit&, const Unit&) = default;
};

/// Who is reading: shard `rank * num_workers + worker` of `world_size * num_workers`.
struct ShardSpec {
  uint32_t rank = 0, world_size = 1;
  uint32_t worker = 0, num_workers = 1;
  bool shuffle = false;  ///< deal the units in an order drawn from (seed, epoch)
  uint64_t seed = 0, epoch = 0;
  friend bool operator==(const ShardSpec&, const ShardSpec&) = default;
};

/// `invalid` unless world_size and num_workers are at least 1 and rank and worker are below them.
[[nodiscard]] Result<void> validate(const ShardSpec& spec);

/// The units of @p file (numbered @p file_index): cut at every chunk boundary of every column,
/// and pieces longer than @p max_rows cut into equal parts of at most that many rows. A file
/// with no rows has no units.
[[nodiscard]] Result<std::vector<Unit>> file_units(const VortexFile& file, uint32_t file_index = 0,
                                                   uint64_t max_rows = defaults().shard_unit_rows);

/// The units shard (rank, worker) reads, in reading order: with `shuffle`, @p all permuted by a
/// Fisher-Yates shuffle driven by splitmix64 seeded with `seed ^ (epoch * 0x9E3779B97F4A7C15)`
/// (draw `j = next() % (i + 1)` for i from n-1 down to 1); then every (world_size * num_workers)-th
/// unit starting at rank * num_workers + worker. Over all shards the result partitions @p all.
[[nodiscard]] std::vector<Unit> shard_units(std::span<const Unit> all, const ShardSpec& spec);

/// Where a sharded scan stands: the unit it is in (an index into its unit list) and the rows of
/// that unit's output already delivered. Rows are counted after the filter, so a scan resumed at
/// a position delivers exactly the rows the original had not yet delivered.
struct UnitPosition {
  uint64_t unit = 0;
  uint64_t rows = 0;
  friend bool operator==(const UnitPosition&, const UnitPosition&) = default;
};

/// A scan over a list of units of one file, in order; each batch lies within one unit.
class UnitScan : public Scan {
 public:
  /// The position just after the last batch next() returned (the start before the first).
  [[nodiscard]] virtual UnitPosition position() const = 0;
};

/// Scans @p units of @p file (their `file` fields are ignored) with @p options (its row_range
/// must be unset), starting at @p start: units before start.unit are skipped, and the first
/// start.rows output rows of unit start.unit are dropped. `invalid` for a unit past the file's
/// end or a start past the last unit.
[[nodiscard]] Result<std::unique_ptr<UnitScan>> scan_units(std::shared_ptr<const VortexFile> file,
                                                           ScanOptions options,
                                                           std::vector<Unit> units,
                                                           UnitPosition start);

}  // namespace oc::format
