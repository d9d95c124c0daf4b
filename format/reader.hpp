// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief The reader's API: open a Vortex file and scan it into record batches.
///
/// @code
///   OC_ASSIGN_OR_RETURN(auto file, VortexFile::open_path("data.vortex"));
///   OC_ASSIGN_OR_RETURN(auto scan, file->scan({.columns = {"a", "b"}}));
///   while (true) {
///     OC_ASSIGN_OR_RETURN(auto batch, scan->next());
///     if (!batch) break;           // end of scan
///     use(*batch);                 // a struct Column with the projected fields
///   }
///   // Only rows where the filter is TRUE; `day` is read to filter but not returned.
///   OC_ASSIGN_OR_RETURN(auto some, file->scan({.columns = {"a"}, .filter = "day >= DATE
///   '2024-01-01'"}));
///   // Rows 5, 17 and 99, decoding only what holds them.
///   OC_ASSIGN_OR_RETURN(ColumnPtr rows, file->take(std::vector<uint64_t>{5, 17, 99}));
/// @endcode
///
/// A filtered scan prunes first (file statistics, then zone maps: format/prune.hpp), then per
/// split evaluates the filter (conjuncts on one column outside the output are pushed into that
/// column's reader, which evaluates dictionaries once per value), and only then fetches and
/// decodes the other projected columns, taking just the surviving rows when they are few.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/error.hpp"
#include "format/column.hpp"
#include "format/footer.hpp"
#include "format/layout_reader.hpp"
#include "format/segment_source.hpp"

namespace oc::format {

struct ScanOptions {
  /// Top-level fields to read, in output order; empty reads all of them.
  std::vector<std::string> columns;
  /// Rows [first, second) of the file; nullopt reads every row.
  std::optional<std::pair<uint64_t, uint64_t>> row_range;
  /// Largest batch in rows; 0 yields the file's natural splits (chunk boundaries).
  uint64_t batch_rows = 0;
  /// A SQL WHERE predicate (grammar in format/expr.hpp); empty keeps every row. Rows are kept
  /// where it is TRUE. Columns it reads that are not in `columns` are not in the output.
  std::string filter;
  /// The layout of every utf8 and binary column in the batches, nested ones included: Arrow
  /// string views (no value copied where the file holds views or a dictionary), or offsets for
  /// consumers that need them (format/string_views.hpp).
  StringLayout strings = StringLayout::views;
  /// Splits decoded at a time, side by side where they share no chunk of any column, and so
  /// held decoded before the first of them is handed out; 0: `scan_decode_threads` at first,
  /// then that times `scan_readahead_splits`. 1 decodes one split after another (each split's
  /// columns still side by side).
  uint32_t splits_in_flight = 0;
  /// Fetches the next splits' segments on the cache's fetch thread while one is decoded; false
  /// fetches every window on the calling thread (the object class: only the OSD's own thread
  /// may read the object).
  bool read_ahead = true;
  /// Decodes the output columns somewhere else (a GPU: client/device_scan.hpp): the columns the
  /// filter does not read reach it as flat chunks with the filter's keep mask, the filter's own
  /// output columns as host columns after filtering; batches hold what it returns. Null: every
  /// column is decoded here, into host memory.
  std::shared_ptr<ChunkDecoder> chunk_decoder;
  /// Appends the column `kRowNumberColumn` (u64, no nulls): each delivered row's number in the
  /// file, so that a caller learns which rows a filter kept (and can take them later). Host
  /// scans only; a file with a top-level field of that name refuses it.
  bool row_numbers = false;
};

/// The name of the column `ScanOptions::row_numbers` appends.
inline constexpr const char* kRowNumberColumn = "_row_number";

/// What a scan did (for `onecopy scan --explain` and tests). Times are wall nanoseconds.
struct ScanStats {
  uint64_t batches = 0;
  uint64_t rows = 0;          ///< rows delivered
  uint64_t rows_scanned = 0;  ///< rows in the row range
  uint64_t rows_pruned = 0;   ///< rows skipped by file statistics or zone maps, never read
  uint64_t zones_total = 0;   ///< zones of the filter's columns that overlap the row range
  uint64_t zones_pruned = 0;  ///< of those, zones statistics proved empty of matches
  bool file_pruned = false;   ///< file statistics proved that no row matches
  uint64_t segments_read = 0;
  uint64_t bytes_read = 0;      ///< segment bytes fetched from the source (a pushed-down
                                ///< scan: the answers' bytes)
  uint64_t pushdown_calls = 0;  ///< pieces scanned in the storage servers (ScanPushdown)
  uint64_t plan_ns = 0;         ///< binding the filter and pruning
  uint64_t fetch_ns = 0;        ///< waiting for segment reads
  uint64_t filter_ns = 0;       ///< decoding and evaluating the filter's columns
  uint64_t decode_ns = 0;       ///< decoding the projected columns
};

/// Adds what @p s read and pruned to @p into: every counter but `batches` and `rows`, which a
/// scan made of other scans counts itself as it delivers.
void add_read_stats(ScanStats& into, const ScanStats& s);

class Scan {
 public:
  virtual ~Scan() = default;
  /// @return the next batch (a non-nullable struct column), or nullopt at the end. Never throws:
  /// an exception below (a failed allocation) is this call's error.
  [[nodiscard]] Result<std::optional<ColumnPtr>> next() {
    return catch_all("scan", [&] { return next_batch(); });
  }
  /// @return the dtype of every batch.
  [[nodiscard]] virtual const DTypePtr& dtype() const = 0;
  /// @return the layout of the batches' strings (`ScanOptions::strings`).
  [[nodiscard]] virtual StringLayout strings() const = 0;
  [[nodiscard]] virtual ScanStats stats() const = 0;

 protected:
  /// The batch `next` returns; implementations may throw only what `catch_all` turns into errors.
  [[nodiscard]] virtual Result<std::optional<ColumnPtr>> next_batch() = 0;
};

class VortexFile;

/// Runs scans somewhere other than this process: in the storage server that holds the file (a
/// Ceph object class: client/rados_pushdown.hpp), so that only the surviving rows travel.
class ScanPushdown {
 public:
  virtual ~ScanPushdown() = default;
  /// @return a scan of @p file by @p options run elsewhere, or nullptr when this one is better
  /// run here (nothing to gain, nowhere to run it). Batches are what `scan_here` would yield:
  /// the same dtype, string layout and rows in the same order.
  [[nodiscard]] virtual Result<std::unique_ptr<Scan>> try_scan(const VortexFile& file,
                                                               const ScanOptions& options) = 0;
};

/// An open Vortex file. Thread-compatible: scans are independent of each other.
class VortexFile : public std::enable_shared_from_this<VortexFile> {
 public:
  /// Opens @p source: one tail read plus at most one more (format/footer.hpp).
  [[nodiscard]] static Result<std::shared_ptr<VortexFile>> open(
      std::shared_ptr<SegmentSource> source);
  /// Opens @p source whose footer is already at hand (format/metadata_cache.hpp, a dataset
  /// manifest): no read. `Errc::corrupt` when @p footer is of a file of another size.
  [[nodiscard]] static Result<std::shared_ptr<VortexFile>> open(
      std::shared_ptr<SegmentSource> source, Footer footer);
  /// Opens a local file through io_uring.
  [[nodiscard]] static Result<std::shared_ptr<VortexFile>> open_path(const std::string& path);
  /// Drops the segments its takes left in the take cache.
  ~VortexFile();
  VortexFile(const VortexFile&) = delete;
  VortexFile& operator=(const VortexFile&) = delete;

  [[nodiscard]] const DTypePtr& dtype() const { return footer_.dtype; }
  [[nodiscard]] uint64_t row_count() const { return footer_.layout->row_count; }
  [[nodiscard]] const Footer& footer() const { return footer_; }
  [[nodiscard]] SegmentSource& source() const { return *source_; }
  [[nodiscard]] const std::shared_ptr<SegmentSource>& source_ptr() const { return source_; }

  /// Starts a scan; fails for unknown columns or a row range past the end. With a pushdown set,
  /// it is offered the scan first.
  [[nodiscard]] Result<std::unique_ptr<Scan>> scan(const ScanOptions& options) const;
  /// Starts a scan in this process, whatever the pushdown.
  [[nodiscard]] Result<std::unique_ptr<Scan>> scan_here(const ScanOptions& options) const;
  /// Offers every later `scan` to @p pushdown. Call it before the file is shared.
  void set_pushdown(std::shared_ptr<ScanPushdown> pushdown) { pushdown_ = std::move(pushdown); }

  /// Decodes rows @p rows of @p columns (empty: all) into one batch, in the order given, its
  /// strings in layout @p strings. Indices may be unsorted and repeat. Only the chunks that hold
  /// them are read, and within a chunk only those rows where the encoding allows; of large
  /// segments only the bytes the rows need, of which the process keeps some for this file's
  /// next takes (format/take_cache.hpp). `Errc::invalid` for an index past the end. With
  /// @p read, adds to it what the take fetched from the source (segments_read, bytes_read,
  /// fetch_ns), as a scan counts it.
  [[nodiscard]] Result<ColumnPtr> take(std::span<const uint64_t> rows,
                                       const std::vector<std::string>& columns = {},
                                       StringLayout strings = StringLayout::views,
                                       ScanStats* read = nullptr) const;

  /// Opens a reader over the whole layout tree (inspect, zone maps).
  [[nodiscard]] Result<std::unique_ptr<LayoutReader>> open_reader(SegmentCache& cache) const;

 private:
  [[nodiscard]] Result<ColumnPtr> take_rows(std::span<const uint64_t> rows,
                                            const std::vector<std::string>& columns,
                                            StringLayout strings, ScanStats* read) const;
  VortexFile(std::shared_ptr<SegmentSource> s, Footer f)
      : source_(std::move(s)), footer_(std::move(f)) {}
  std::shared_ptr<SegmentSource> source_;
  std::shared_ptr<ScanPushdown> pushdown_;
  Footer footer_;
  uint64_t take_cache_id_ = TakeCache::new_file_id();
};

}  // namespace oc::format
