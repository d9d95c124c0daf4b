// SPDX-License-Identifier: Apache-2.0
// Sharded scans. Units are cut at chunk boundaries so that no unit shares a decoded chunk with
// another reader's unit; dealing them round-robin after the shuffle keeps shard sizes within one
// unit of each other. A unit is scanned as an ordinary row-range scan, so filters, pruning and
// pushdown apply inside it unchanged.
#include "format/shard.hpp"

#include <algorithm>

#include "format/layout_reader.hpp"

namespace oc::format {

Result<void> validate(const ShardSpec& s) {
  OC_EXPECT(s.world_size >= 1 && s.rank < s.world_size, invalid,
            "rank {} is not below world_size {}", s.rank, s.world_size);
  OC_EXPECT(s.num_workers >= 1 && s.worker < s.num_workers, invalid,
            "worker {} is not below num_workers {}", s.worker, s.num_workers);
  return {};
}

Result<std::vector<Unit>> file_units(const VortexFile& file, uint32_t file_index,
                                     uint64_t max_rows) {
  OC_EXPECT(max_rows >= 1, invalid, "units need at least one row");
  SegmentCache cache(file.source_ptr(), file.footer());
  OC_ASSIGN_OR_RETURN(auto reader, file.open_reader(cache));
  const uint64_t rows = file.row_count();
  std::vector<uint64_t> points{0, rows};
  reader->collect_splits(0, points);
  std::sort(points.begin(), points.end());
  points.erase(std::unique(points.begin(), points.end()), points.end());
  // Counted before anything is stored: a small max_rows over a large file would otherwise cost
  // memory in proportion to the file's rows.
  uint64_t count = 0;
  const uint64_t max_pieces = defaults().plan_max_pieces;
  for (size_t i = 0; i + 1 < points.size() && points[i + 1] <= rows; ++i) {
    const uint64_t span = points[i + 1] - points[i];
    count += span / max_rows + (span % max_rows != 0);
    OC_EXPECT(count <= max_pieces, invalid,
              "units of at most {} rows cut this file into more than {} units (plan_max_pieces); "
              "use larger units",
              max_rows, max_pieces);
  }
  std::vector<Unit> units;
  units.reserve(count);
  for (size_t i = 0; i + 1 < points.size() && points[i + 1] <= rows; ++i) {
    const uint64_t b = points[i], e = points[i + 1];
    // Equal parts rather than max_rows pieces plus a stub, so units stay comparable in size.
    const uint64_t parts = (e - b) / max_rows + ((e - b) % max_rows != 0);
    for (uint64_t p = 0; p < parts; ++p) {
      // 128-bit products: (e - b) x p overflows 64 bits for a file that claims 2^40 rows.
      __extension__ using u128 = unsigned __int128;
      const auto cut = [&](uint64_t q) {
        return b + static_cast<uint64_t>(u128{e - b} * q / parts);
      };
      units.push_back({file_index, cut(p), cut(p + 1)});
    }
  }
  return units;
}

namespace {

// splitmix64 (Steele, Lea, Flood 2014): a full-period generator whose outputs are well mixed
// even for consecutive seeds, which matters because epochs are consecutive.
struct SplitMix64 {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
};

}  // namespace

std::vector<Unit> shard_units(std::span<const Unit> all, const ShardSpec& spec) {
  std::vector<Unit> order(all.begin(), all.end());
  if (spec.shuffle && order.size() > 1) {
    SplitMix64 rng{spec.seed ^ (spec.epoch * 0x9E3779B97F4A7C15ull)};
    for (size_t i = order.size() - 1; i > 0; --i) {
      std::swap(order[i], order[rng.next() % (i + 1)]);
    }
  }
  const uint64_t shards = uint64_t{spec.world_size} * spec.num_workers;
  std::vector<Unit> mine;
  for (uint64_t i = uint64_t{spec.rank} * spec.num_workers + spec.worker; i < order.size();
       i += shards) {
    mine.push_back(order[i]);
  }
  return mine;
}

namespace {

class UnitScanImpl final : public UnitScan {
 public:
  UnitScanImpl(std::shared_ptr<const VortexFile> file, ScanOptions opts, std::vector<Unit> units,
               UnitPosition start)
      : file_(std::move(file)),
        opts_(std::move(opts)),
        units_(std::move(units)),
        pos_(start),
        skip_(start.rows) {}

  Result<void> init() {
    OC_EXPECT(!opts_.row_range, invalid, "a unit scan takes its row ranges from its units");
    for (const Unit& u : units_) {
      OC_EXPECT(u.begin <= u.end && u.end <= file_->row_count(), invalid,
                "unit [{}, {}) is outside the file's {} rows", u.begin, u.end, file_->row_count());
    }
    OC_EXPECT(pos_.unit <= units_.size(), invalid, "start unit {} is past the {} units", pos_.unit,
              units_.size());
    // An empty range binds the projection and the filter, so errors in either surface here
    // and the dtype is known even when there is no unit to read.
    ScanOptions probe = opts_;
    probe.row_range = std::pair<uint64_t, uint64_t>{0, 0};
    OC_ASSIGN_OR_RETURN(auto scan, file_->scan(probe));
    dtype_ = scan->dtype();
    return {};
  }

  Result<std::optional<ColumnPtr>> next_batch() override {
    while (true) {
      if (!current_) {
        if (pos_.unit >= units_.size()) return std::optional<ColumnPtr>{};
        ScanOptions o = opts_;
        o.row_range = std::pair{units_[pos_.unit].begin, units_[pos_.unit].end};
        OC_ASSIGN_OR_RETURN(current_, file_->scan(o));
      }
      OC_ASSIGN_OR_RETURN(auto batch, current_->next());
      if (!batch) {
        add_stats(current_->stats());
        current_.reset();
        pos_ = {pos_.unit + 1, 0};
        skip_ = 0;
        continue;
      }
      ColumnPtr b = *batch;
      if (skip_ > 0) {
        // Resuming inside this unit: drop the rows the interrupted reader already delivered.
        const uint64_t drop = std::min(skip_, b->length);
        skip_ -= drop;
        if (drop == b->length) continue;
        b = slice(b, drop, b->length - drop);
      }
      if (b->length == 0) continue;
      pos_.rows += b->length;
      ++stats_.batches;
      stats_.rows += b->length;
      return std::optional<ColumnPtr>{std::move(b)};
    }
  }

  const DTypePtr& dtype() const override { return dtype_; }
  StringLayout strings() const override { return opts_.strings; }

  ScanStats stats() const override {
    ScanStats s = stats_;
    if (current_) add_read_stats(s, current_->stats());
    return s;
  }

  UnitPosition position() const override { return pos_; }

 private:
  void add_stats(const ScanStats& s) { add_read_stats(stats_, s); }

  std::shared_ptr<const VortexFile> file_;
  ScanOptions opts_;
  std::vector<Unit> units_;
  // Starts at the resume point: the rows skipped there count as delivered, as they were by
  // the reader being resumed.
  UnitPosition pos_;
  uint64_t skip_;  // output rows of the start unit still to drop
  std::unique_ptr<Scan> current_;
  DTypePtr dtype_;
  ScanStats stats_;
};

}  // namespace

Result<std::unique_ptr<UnitScan>> scan_units(std::shared_ptr<const VortexFile> file,
                                             ScanOptions options, std::vector<Unit> units,
                                             UnitPosition start) {
  auto scan =
      std::make_unique<UnitScanImpl>(std::move(file), std::move(options), std::move(units), start);
  OC_TRY(scan->init());
  return std::unique_ptr<UnitScan>(std::move(scan));
}

}  // namespace oc::format
