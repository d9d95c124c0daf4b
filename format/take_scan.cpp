// SPDX-License-Identifier: Apache-2.0
#include "format/take_scan.hpp"

#include <algorithm>
#include <optional>
#include <utility>

#include "format/scan.hpp"
#include "format/scan_profile.hpp"
#include "format/segment_cache.hpp"

namespace oc::format {
namespace {

class TakeScan final : public Scan {
 public:
  TakeScan(std::shared_ptr<const VortexFile> file, std::vector<uint64_t> rows,
           std::vector<std::string> columns, uint64_t batch_rows, StringLayout strings,
           DTypePtr dtype)
      : file_(std::move(file)),
        rows_(std::move(rows)),
        columns_(std::move(columns)),
        batch_rows_(batch_rows),
        strings_(strings),
        dtype_(std::move(dtype)) {}

  const DTypePtr& dtype() const override { return dtype_; }
  StringLayout strings() const override { return strings_; }
  ScanStats stats() const override { return stats_; }

 private:
  Result<std::optional<ColumnPtr>> next_batch() override {
    if (!taken_) {
      if (done_) return std::optional<ColumnPtr>();
      const uint64_t start = monotonic_ns(), fetched = stats_.fetch_ns;
      auto taken = file_->take(rows_, columns_, strings_, &stats_);
      // The take's time less its reads' waits (which it counted as fetch_ns).
      stats_.decode_ns += monotonic_ns() - start - (stats_.fetch_ns - fetched);
      OC_ASSIGN_OR_RETURN(taken_, std::move(taken));
      rows_ = {};
      stats_.rows_scanned = taken_->length;
    }
    // Slices of the one taken batch, no value copied: each field is sliced, and the batch has
    // no offset of its own, as every scan's batches (a record batch has no root nulls).
    const uint64_t left = taken_->length - at_;
    const uint64_t n = batch_rows_ ? std::min(batch_rows_, left) : left;
    ColumnPtr out = taken_;
    if (n != taken_->length) {
      auto part = std::make_shared<Column>(*taken_);
      part->length = n;
      part->offset = 0;
      for (ColumnPtr& f : part->children) f = slice(f, taken_->offset + at_, n);
      out = std::move(part);
    }
    at_ += n;
    if (at_ == taken_->length) {
      taken_.reset();
      done_ = true;
    }
    ++stats_.batches;
    stats_.rows += n;
    return std::optional<ColumnPtr>(std::move(out));
  }

  std::shared_ptr<const VortexFile> file_;
  std::vector<uint64_t> rows_;
  std::vector<std::string> columns_;
  uint64_t batch_rows_;
  StringLayout strings_;
  DTypePtr dtype_;
  ColumnPtr taken_;  // the take, until its last slice is out
  uint64_t at_ = 0;  // rows of it delivered
  bool done_ = false;
  ScanStats stats_;
};

}  // namespace

Result<std::unique_ptr<Scan>> take_scan(std::shared_ptr<const VortexFile> file,
                                        std::vector<uint64_t> rows,
                                        std::vector<std::string> columns, uint64_t batch_rows,
                                        StringLayout strings) {
  // The batch type, and the columns' check, without a read: readers open from the footer.
  SegmentCache cache(file->source_ptr(), file->footer());
  OC_ASSIGN_OR_RETURN(TableReader table, open_table_reader(*file, columns, cache));
  return std::unique_ptr<Scan>(std::make_unique<TakeScan>(
      std::move(file), std::move(rows), std::move(columns), batch_rows, strings, table.batch_type));
}

}  // namespace oc::format
