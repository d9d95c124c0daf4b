// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief Readers for the Vortex layout tree: struct, chunked, flat, dict, zoned and stats.
///
/// | layout          | children                                   | segments | metadata |
/// |-----------------|--------------------------------------------|----------|------------------------|
/// | vortex.struct   | [validity if the struct is nullable], fields | 0      | none | |
/// vortex.chunked  | N row chunks of the parent's dtype         | 0        | none | | vortex.flat
/// | none                                       | 1        | FlatLayoutMetadata     | | vortex.dict
/// | [values, codes]                            | 0        | DictLayoutMetadata     | |
/// vortex.zoned    | [data, zones table]                        | 0        | u8 version=1,
/// ZonedLayoutMetadata | | vortex.stats    | [data, zones table] (writers 0.36 to 0.75) | 0 | u32
/// LE zone_len, u16 stat bitset |
///
/// Layouts store no dtypes; a reader derives its children's from its own. Row counts are
/// checked against the children's as the tree is built. A reader decodes lazily: `read` touches
/// only the chunks that overlap the requested rows, and a flat segment is decoded once and kept
/// while successive reads slice it, until `release_before` passes it. Reads of rows on
/// different sides of an `independent_starts` row may run concurrently; others, one at a time.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "config/error.hpp"
#include "format/column.hpp"
#include "format/decode.hpp"
#include "format/expr_bind.hpp"
#include "format/footer.hpp"
#include "format/partial_segment.hpp"
#include "format/segment_cache.hpp"
#include "format/segment_source.hpp"
#include "format/take_cache.hpp"

namespace oc::format {

/// Zone-map statistics of a zoned/stats layout: the decoded zones table and its geometry.
struct ZoneTable {
  uint64_t zone_len = 0;  ///< rows per zone; 0 means "never prune" (legacy files)
  ColumnPtr table;        ///< struct column, one row per zone, fields named by statistic
};

class LayoutReader;

/// Decodes columns somewhere other than host memory (a GPU: client/device_scan.hpp) for
/// `LayoutReader::read_to`: flat chunks reach it as encoded trees, anything else decoded here.
/// Both calls keep the rows whose byte in @p keep is non-zero (null: every row), so the rows
/// a filter dropped never travel. Called from the scan's decode threads, one call per column
/// per split at a time for each column, several columns at once.
class ChunkDecoder {
 public:
  virtual ~ChunkDecoder() = default;
  /// Rows @p rows of the flat chunk @p tree (type @p dtype, @p chunk_rows rows), with strings
  /// in layout @p strings.
  [[nodiscard]] virtual Result<ColumnPtr> decode_flat(const ArrayView& tree, const DTypePtr& dtype,
                                                      uint64_t chunk_rows, RowWindow rows,
                                                      const std::vector<uint8_t>* keep,
                                                      StringLayout strings) = 0;
  /// @p decoded (host memory), with the kept rows only, moved where the decoder delivers.
  [[nodiscard]] virtual Result<ColumnPtr> place(ColumnPtr decoded,
                                                const std::vector<uint8_t>* keep) = 0;
  /// Completes the columns handed out so far: the scan calls it once a split's columns were all
  /// asked for, before the batch leaves, so a decoder may defer their decoding until then and
  /// do it in one piece. Until it returns, those columns' buffers may still be being written.
  [[nodiscard]] virtual Result<void> finish_split() { return {}; }
};

/// A zoned/stats reader and the row at which its zones start.
struct ZoneMapRef {
  uint64_t first_row = 0;
  LayoutReader* reader = nullptr;
};

class LayoutReader {
 public:
  virtual ~LayoutReader() = default;
  [[nodiscard]] uint64_t row_count() const { return layout_->row_count; }
  [[nodiscard]] const DTypePtr& dtype() const { return dtype_; }
  [[nodiscard]] const LayoutNode& layout() const { return *layout_; }

  /// Appends the row offsets (relative to this layout, plus @p base) where its chunks start.
  virtual void collect_splits(uint64_t base, std::vector<uint64_t>& out) const = 0;
  /// The rows (relative to this layout, sorted, 0 first) where every column below starts a
  /// chunk: reads on different sides of one share no decoding state, so they may run at the
  /// same time (a dictionary's values, shared, are read once under a lock). Reads between two
  /// of them must run one at a time.
  [[nodiscard]] virtual std::vector<uint64_t> independent_starts() const = 0;
  /// Drops the decoded form of the chunks that end at or before row @p row: the caller (a scan,
  /// moving forward) reads nothing before it any more. Not while a read runs.
  virtual void release_before(uint64_t row) { (void)row; }
  /// Appends the segments needed to read rows [begin, end).
  virtual void collect_segments(uint64_t begin, uint64_t end, std::vector<uint32_t>& out) const = 0;
  /// Decodes rows [begin, end) (0 <= begin <= end <= row_count()).
  [[nodiscard]] virtual Result<ColumnPtr> read(uint64_t begin, uint64_t end) = 0;
  /// `read` of each of @p windows (ascending, disjoint, each as `read` takes it), in order: one
  /// column per window. A struct reads each field's windows one after another, beside the
  /// other fields, so that no field waits for the others at every window; the base reads the
  /// windows one by one.
  [[nodiscard]] virtual Result<std::vector<ColumnPtr>> read_each(
      std::span<const RowWindow> windows);
  /// Rows [begin, end), kept by @p keep (one byte per row, non-zero keeps; null: all), decoded
  /// by @p d: a flat chunk goes to it encoded, structs and zoned layouts pass it down, a chunked
  /// layout passes it to the one chunk that holds the rows; anything else (dict layouts, nullable
  /// structs, rows over several chunks) is read here and placed by @p d.
  [[nodiscard]] virtual Result<ColumnPtr> read_to(ChunkDecoder& d, uint64_t begin, uint64_t end,
                                                  const std::vector<uint8_t>* keep);
  /// Tells the reader that only @p ranges (sorted, disjoint, within [0, row_count())) will be
  /// read, so that a chunk cut by them decodes just the planned run that a read falls in (a
  /// slice decode). Without a plan every chunk decodes whole.
  virtual void plan_rows(std::span<const RowWindow> ranges) = 0;
  /// Tells the reader, and those below it, the layout its reads' strings will be delivered in
  /// (`DecodeContext::strings`); views unless told.
  virtual void prefer_strings(StringLayout strings) { strings_ = strings; }
  /// Evaluates @p pred, a filter bound against the one-field struct {value: dtype()}, on rows
  /// [begin, end): one Truth byte per row. Readers that can evaluate without decoding every
  /// row (dictionaries, compressed segments) override it; the base reads and evaluates.
  [[nodiscard]] virtual Result<std::vector<uint8_t>> evaluate(const BoundExpr& pred, uint64_t begin,
                                                              uint64_t end);
  /// Decodes rows @p rows (sorted, unique, each < row_count()) into a column of rows.size()
  /// rows. Reads only the chunks that hold them; the base version decodes the window from the
  /// first to the last row and gathers, readers that can do better override it. In a round of
  /// a take that reads segments in part (`SegmentCache::read_takes_in_part`), a reader whose
  /// child failed while bytes are pending still takes its other children, so that one round
  /// asks for the bytes of all of them.
  [[nodiscard]] virtual Result<ColumnPtr> take(std::span<const uint64_t> rows);
  /// Drops decoded data held for reuse; the next read decodes again.
  virtual void release() {}
  /// Zone maps found at or below this reader, outermost first (for inspect and pruning), each
  /// with the row (relative to this reader, plus @p base) where its data starts.
  virtual void collect_zone_readers(uint64_t base, std::vector<ZoneMapRef>& out) {
    (void)base;
    (void)out;
  }
  /// For zoned/stats readers: the zones table (read on first call, then cached).
  [[nodiscard]] virtual Result<ZoneTable> zones() {
    return OC_ERROR(Errc::invalid, "{} has no zone map", layout_->encoding);
  }

 protected:
  LayoutReader(LayoutPtr layout, DTypePtr dtype, SegmentCache& cache)
      : layout_(std::move(layout)), dtype_(std::move(dtype)), cache_(cache) {}
  LayoutPtr layout_;
  DTypePtr dtype_;
  SegmentCache& cache_;
  StringLayout strings_ = StringLayout::views;
};

/// The rows that are independent starts (`LayoutReader::independent_starts`) of every reader of
/// @p readers, all over the same rows: where reads on either side share no state in any of
/// them. {0} for no reader.
[[nodiscard]] std::vector<uint64_t> common_independent_starts(
    std::span<const LayoutReader* const> readers);

/// Builds the reader for @p layout read as @p dtype.
/// @param fields if non-empty and @p layout is the root struct, only these fields are opened.
[[nodiscard]] Result<std::unique_ptr<LayoutReader>> make_layout_reader(const LayoutPtr& layout,
                                                                       const DTypePtr& dtype,
                                                                       SegmentCache& cache,
                                                                       uint32_t depth = 0);

/// Reader for a struct layout limited to @p fields (in the given order), used by projections.
[[nodiscard]] Result<std::unique_ptr<LayoutReader>> make_projected_struct_reader(
    const LayoutPtr& layout, const DTypePtr& dtype, std::span<const std::string> fields,
    SegmentCache& cache);

}  // namespace oc::format
