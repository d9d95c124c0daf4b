// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief One scan, as every layer asks for it, and the one planner that turns it into a scan.
///
/// A `ScanRequest` is built once where a scan is asked for (Python's `onecopy._request`, the
/// C API's `onecopy_scan_options`, the CLI) and travels unchanged: the daemon protocol carries it
/// as `Scan` (daemon/scan_wire.hpp, `to_fbs` / `from_fbs`), and `plan` turns it into a scan of
/// one file, in process or in onecopyd. Its rules are checked in one place, `validate`, with one
/// error text each.
///
/// Which rows a scan reads is one choice of five (`Selection`):
///
/// | selection        | rows                                              | positions |
/// |------------------|---------------------------------------------------|-----------|
/// | `AllRows`        | every row, in order                               | none      |
/// | `RowRange`       | rows [begin, end), end `kToEnd` for the last row   | none      |
/// | `ShardSelection` | shard (rank, worker)'s units (format/shard.hpp)   | unit, rows |
/// | `RangeSelection` | the given (begin, end) ranges as units, in order  | unit, rows |
/// | `TakeRows`       | the given rows, in order, repeats kept (a take)   | none      |
///
/// A scan of units (a shard or ranges) starts at `start` and reports its position after each
/// batch, so that a reader that lost its connection resumes without repeating or losing a row.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "config/error.hpp"
#include "format/reader.hpp"
#include "format/shard.hpp"

namespace oc::format {

/// Every row of the file.
struct AllRows {
  friend bool operator==(const AllRows&, const AllRows&) = default;
};

/// Rows [begin, end) of the file; `end` `kToEnd` reads to its last row.
struct RowRange {
  static constexpr uint64_t kToEnd = UINT64_MAX;
  uint64_t begin = 0, end = kToEnd;
  friend bool operator==(const RowRange&, const RowRange&) = default;
};

/// Shard (rank, worker) of a sharded reading: the file cut into units of at most `unit_rows`
/// rows (0: the `shard_unit_rows` knob where the plan is made), dealt as `spec` says.
struct ShardSelection {
  ShardSpec spec;
  uint64_t unit_rows = 0;
  friend bool operator==(const ShardSelection&, const ShardSelection&) = default;
};

/// Explicit row ranges, read in the order given as units (empty reads no row).
struct RangeSelection {
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  friend bool operator==(const RangeSelection&, const RangeSelection&) = default;
};

/// The given rows, in the order given, repeats kept: a take (VortexFile::take), which reads of
/// each segment only the bytes those rows need. No filter, on the host only.
struct TakeRows {
  std::vector<uint64_t> rows;
  friend bool operator==(const TakeRows&, const TakeRows&) = default;
};

using Selection = std::variant<AllRows, RowRange, ShardSelection, RangeSelection, TakeRows>;

/// Where a scan's batches are decoded and delivered.
inline constexpr int32_t kHostDevice = -1;           ///< host memory (decoded on the CPU)
inline constexpr int32_t kHostReferenceDevice = -2;  ///< a device scan's steps run on the host

struct ScanRequest {
  /// Top-level fields, in output order; empty: all of them.
  std::vector<std::string> columns;
  /// A SQL WHERE predicate (format/expr.hpp); empty keeps every row.
  std::string filter;
  /// Largest batch in rows; 0: the file's natural splits.
  uint64_t batch_rows = 0;
  Selection selection = AllRows{};
  /// The layout of strings and binaries (a device scan always delivers offsets).
  StringLayout strings = StringLayout::views;
  /// A CUDA device number, `kHostDevice` or `kHostReferenceDevice`.
  int32_t device = kHostDevice;
  /// With a shard or ranges: where to start (a position a cursor reported).
  UnitPosition start;
  /// Appends each delivered row's number in the file as the column `kRowNumberColumn`
  /// (ScanOptions::row_numbers): which rows a filter kept. Host scans only, not a take.
  bool row_numbers = false;

  /// @return whether the scan reads units (a shard or ranges) and so reports positions.
  [[nodiscard]] bool reads_units() const noexcept {
    return std::holds_alternative<ShardSelection>(selection) ||
           std::holds_alternative<RangeSelection>(selection);
  }
  /// `invalid`, saying what is wrong, for a reversed row range or unit range, a shard spec that
  /// format::validate refuses, a start without units to start in, a device number below
  /// `kHostReferenceDevice`, a take with a filter, a device or row numbers, or row numbers on a
  /// device. Columns and the filter are checked when the scan is planned, against the file.
  [[nodiscard]] Result<void> validate() const;
  /// @return the request as one JSON object (`onecopy_scan_request_json`): columns, filter,
  /// batch_rows, selection ({"all": true}, {"row_range": [b, e]}, {"shard": {...}} or
  /// {"ranges": [[b, e], ...]} or {"rows": [r, ...]}), strings, device, start and row_numbers.
  [[nodiscard]] std::string to_json() const;

  friend bool operator==(const ScanRequest&, const ScanRequest&) = default;
};

/// The selection of a request whose maker may name several at once (a C caller's options, the
/// `Scan` of a client that does not state its selection): the one given, `AllRows` for none,
/// and `invalid`, naming them, for more than one.
[[nodiscard]] Result<Selection> one_selection(const std::optional<RowRange>& rows,
                                              const std::optional<ShardSelection>& shard,
                                              const std::optional<RangeSelection>& ranges,
                                              const std::optional<TakeRows>& take);

/// A scan ready to read, and how many units it reads (0 unless it reads units).
struct PlannedScan {
  std::unique_ptr<Scan> scan;
  uint64_t units = 0;
};

/// How `plan` runs a scan, beyond what the request says.
struct PlanOptions {
  /// Units of a shard whose request says 0 rows (onecopyd: its own shard_unit_rows).
  uint64_t default_unit_rows = 0;  ///< 0: the shard_unit_rows knob
  /// Splits decoded at a time (ScanOptions::splits_in_flight; onecopyd paces with 1).
  uint32_t splits_in_flight = 0;
  /// Decodes the output columns on a device (a GPU's decoder, or its host reference): strings
  /// then arrive as offsets, and the scan runs here, never pushed down. Required when the
  /// request names a device; null for a host scan.
  std::shared_ptr<ChunkDecoder> device_decoder = nullptr;
};

/// The one planner: @p request (validated here) over @p file. Errors of the columns or the
/// filter are the scan's own (VortexFile::scan); a start past the last unit is `invalid`. A
/// take (`TakeRows`) is planned without reading: its rows are checked and read by the first
/// `next` (format/take_scan.hpp), so that they are decoded where batches are.
/// @note Cutting a file into units reads its layout, which may fetch from the file's source.
[[nodiscard]] Result<PlannedScan> plan(std::shared_ptr<const VortexFile> file,
                                       const ScanRequest& request, const PlanOptions& how = {});

/// @return where @p scan stands after the last batch it returned, when it reads units; {0, 0}
/// otherwise.
[[nodiscard]] UnitPosition position_after(const Scan& scan);

}  // namespace oc::format
