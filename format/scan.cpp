// SPDX-License-Identifier: Apache-2.0
// The file scan. A split is a row range that no chunk boundary of any read column cuts, so each
// split slices exactly one decoded chunk per column (Vortex's split-by-layout). With a filter a
// split goes through two phases: the filter's columns are fetched, decoded and evaluated first,
// and the remaining projected columns are fetched only for splits where some row survived, so
// a selective filter saves their I/O as well as their decoding.
#include "format/scan.hpp"

#include <algorithm>
#include <chrono>

#include "config/defaults.hpp"
#include "format/expr_bind.hpp"
#include "format/expr_eval.hpp"
#include "format/expr_parser.hpp"

namespace oc::format {
namespace {

uint64_t now_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

// Adds the time from construction to destruction to a counter.
class StageTimer {
 public:
  explicit StageTimer(uint64_t& into) : into_(into), start_(now_ns()) {}
  ~StageTimer() { into_ += now_ns() - start_; }
  StageTimer(const StageTimer&) = delete;
  StageTimer& operator=(const StageTimer&) = delete;

 private:
  uint64_t& into_;
  uint64_t start_;
};

void sort_unique(std::vector<uint32_t>& ids) {
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
}

class FileScan final : public Scan {
 public:
  FileScan(std::shared_ptr<const VortexFile> file, ScanOptions opts)
      : file_(std::move(file)), opts_(std::move(opts)), cache_(file_->source_ptr(), file_->footer()) {}

  Result<void> init() {
    StageTimer t(stats_.plan_ns);
    // The output's columns, then the filter's: those it reads but the output lacks are read
    // by the filter's reader only and dropped after evaluation.
    OC_ASSIGN_OR_RETURN(TableReader all, open_table_reader(*file_, opts_.columns, cache_));
    dtype_ = all.batch_type;
    const uint64_t rows = all.reader->row_count();
    std::vector<std::string> rest = dtype_->names;
    if (!opts_.filter.empty()) {
      OC_ASSIGN_OR_RETURN(ExprPtr parsed, parse_expr(opts_.filter));
      // Bind against every column first, so an unknown name lists all the file's columns.
      OC_ASSIGN_OR_RETURN(TableReader whole, open_table_reader(*file_, {}, cache_));
      OC_ASSIGN_OR_RETURN(BoundExpr probe, format::bind(*parsed, *whole.batch_type, opts_.filter));
      std::vector<std::string> fields;
      for (const auto& name : whole.batch_type->names) {
        for (const auto& c : probe.columns) {
          if (c.path[0] == name) {
            fields.push_back(name);
            break;
          }
        }
      }
      OC_ASSIGN_OR_RETURN(filter_, open_table_reader(*file_, fields, cache_));
      OC_ASSIGN_OR_RETURN(bound_, format::bind(*parsed, *filter_.batch_type, opts_.filter));
      std::erase_if(rest, [&](const std::string& n) {
        return std::find(fields.begin(), fields.end(), n) != fields.end();
      });
    }
    if (!rest.empty() || !filter_.reader) {
      OC_ASSIGN_OR_RETURN(rest_, open_table_reader(*file_, rest, cache_));
    }
    begin_ = 0;
    end_ = rows;
    if (opts_.row_range) {
      OC_EXPECT(opts_.row_range->first <= opts_.row_range->second && opts_.row_range->second <= rows,
                invalid, "row range [{}, {}) is outside the file's {} rows", opts_.row_range->first,
                opts_.row_range->second, rows);
      begin_ = opts_.row_range->first;
      end_ = opts_.row_range->second;
    }
    stats_.rows_scanned = end_ - begin_;
    for (TableReader* r : readers()) r->reader->plan_rows(begin_, end_);
    std::vector<uint64_t> points;
    for (TableReader* r : readers()) r->reader->collect_splits(0, points);
    points.push_back(begin_);
    points.push_back(end_);
    std::sort(points.begin(), points.end());
    points.erase(std::unique(points.begin(), points.end()), points.end());
    for (size_t i = 0; i + 1 < points.size(); ++i) {
      const uint64_t b = std::max(points[i], begin_), e = std::min(points[i + 1], end_);
      if (b >= e) continue;
      const uint64_t step = opts_.batch_rows ? opts_.batch_rows : e - b;
      for (uint64_t s = b; s < e; s += step) splits_.emplace_back(s, std::min(e, s + step));
    }
    return {};
  }

  Result<std::optional<ColumnPtr>> next() override {
    while (next_ < splits_.size()) {
      OC_TRY(prefetch_ahead());
      const auto [b, e] = splits_[next_++];
      ColumnPtr filtered;
      Mask mask;
      if (filter_.reader) {
        StageTimer t(stats_.filter_ns);
        OC_ASSIGN_OR_RETURN(ColumnPtr col, filter_.reader->read(b, e));
        OC_ASSIGN_OR_RETURN(filtered, filter_.to_batch(std::move(col)));
        OC_ASSIGN_OR_RETURN(mask, evaluate(bound_, *filtered));
        if (mask.count == 0) continue;
      }
      ColumnPtr rest;
      if (rest_.reader) {
        if (filter_.reader) {
          // Phase two: this split's remaining columns, now that a row is known to survive.
          std::vector<uint32_t> ids;
          rest_.reader->collect_segments(b, e, ids);
          sort_unique(ids);
          StageTimer t(stats_.fetch_ns);
          OC_TRY(cache_.prefetch(ids));
        }
        StageTimer t(stats_.decode_ns);
        OC_ASSIGN_OR_RETURN(ColumnPtr col, rest_.reader->read(b, e));
        OC_ASSIGN_OR_RETURN(rest, rest_.to_batch(std::move(col)));
      }
      OC_ASSIGN_OR_RETURN(ColumnPtr batch, assemble(filtered, rest, mask));
      ++stats_.batches;
      stats_.rows += batch->length;
      return std::optional<ColumnPtr>(std::move(batch));
    }
    return std::optional<ColumnPtr>();
  }

  const DTypePtr& dtype() const override { return dtype_; }
  ScanStats stats() const override {
    ScanStats s = stats_;
    s.segments_read = cache_.segments_fetched();
    s.bytes_read = cache_.bytes_fetched();
    return s;
  }

 private:
  std::vector<TableReader*> readers() {
    std::vector<TableReader*> out;
    if (filter_.reader) out.push_back(&filter_);
    if (rest_.reader) out.push_back(&rest_);
    return out;
  }

  // Fetches the segments of the next few splits in one coalesced batch: all columns without a
  // filter, the filter's columns with one (the rest wait for the filter's verdict).
  Result<void> prefetch_ahead() {
    if (next_ < prefetched_) return {};
    std::vector<uint32_t> ids;
    const size_t upto = std::min(splits_.size(), next_ + defaults().scan_readahead_splits);
    TableReader& first = filter_.reader ? filter_ : rest_;
    for (size_t i = next_; i < upto; ++i) first.reader->collect_segments(splits_[i].first, splits_[i].second, ids);
    sort_unique(ids);
    StageTimer t(stats_.fetch_ns);
    OC_TRY(cache_.prefetch(ids));
    prefetched_ = upto;
    return {};
  }

  // The output batch: each projected column from whichever reader read it, filtered by the mask.
  Result<ColumnPtr> assemble(const ColumnPtr& filtered, const ColumnPtr& rest, const Mask& mask) {
    const uint64_t len = filtered ? filtered->length : rest->length;
    const bool all = !filtered || mask.count == len;
    auto out = std::make_shared<Column>();
    out->dtype = dtype_;
    out->length = all ? len : mask.count;
    for (const auto& name : dtype_->names) {
      ColumnPtr col;
      for (const auto& [reader, batch] : {std::pair{&filter_, filtered}, std::pair{&rest_, rest}}) {
        if (!batch) continue;
        const auto& names = reader->batch_type->names;
        auto it = std::find(names.begin(), names.end(), name);
        if (it != names.end()) col = batch->children[static_cast<size_t>(it - names.begin())];
      }
      if (!all) {
        StageTimer t(stats_.decode_ns);
        OC_ASSIGN_OR_RETURN(col, filter_rows(col, mask));
      }
      out->children.push_back(std::move(col));
    }
    return ColumnPtr(std::move(out));
  }

  std::shared_ptr<const VortexFile> file_;
  ScanOptions opts_;
  SegmentCache cache_;
  TableReader filter_;  // the filter's columns (no reader without a filter)
  TableReader rest_;    // projected columns the filter does not read
  BoundExpr bound_;     // the filter, bound to filter_'s batches
  DTypePtr dtype_;
  uint64_t begin_ = 0, end_ = 0;
  std::vector<std::pair<uint64_t, uint64_t>> splits_;
  size_t next_ = 0, prefetched_ = 0;
  ScanStats stats_;
};

}  // namespace

Result<ColumnPtr> TableReader::to_batch(ColumnPtr col) const {
  if (wrap) {
    auto s = std::make_shared<Column>();
    s->dtype = batch_type;
    s->length = col->length;
    s->children.push_back(std::move(col));
    return ColumnPtr(std::move(s));
  }
  if (!col->dtype->nullable) return col;
  // A record batch cannot hold nulls of the root struct; push them into the fields.
  auto out = std::make_shared<Column>(*col);
  out->dtype = batch_type;
  out->validity = Buffer();
  out->null_count = 0;
  out->children.clear();
  for (const auto& f : col->children) {
    ColumnPtr child = slice(f, col->offset, col->length);
    Buffer bits = make_bitmap(col->length, false);
    for (uint64_t i = 0; i < col->length; ++i) {
      if (col->is_valid(i) && child->is_valid(i)) bitmap_set(bits.mutable_data(), i, true);
    }
    out->children.push_back(with_validity(child, std::move(bits), f->dtype->with_nullable(true)));
  }
  out->offset = 0;
  return ColumnPtr(std::move(out));
}

Result<TableReader> open_table_reader(const VortexFile& file, std::span<const std::string> columns,
                                      SegmentCache& cache) {
  TableReader out;
  const auto& t = file.dtype();
  if (t->kind == TypeKind::struct_ && file.footer().layout->encoding == "vortex.struct") {
    std::vector<std::string> cols(columns.begin(), columns.end());
    if (cols.empty()) cols = t->names;
    OC_ASSIGN_OR_RETURN(out.reader, make_projected_struct_reader(file.footer().layout, t, cols, cache));
    out.batch_type = out.reader->dtype();
    if (out.batch_type->nullable) {
      std::vector<DTypePtr> fields;
      for (const auto& f : out.batch_type->children) fields.push_back(f->with_nullable(true));
      out.batch_type = DType::make_struct(out.batch_type->names, std::move(fields), false);
    }
    return out;
  }
  OC_EXPECT(columns.empty() || (columns.size() == 1 && columns[0] == "value"), not_found,
            "file of type {} has only the column 'value'", t->to_string());
  OC_ASSIGN_OR_RETURN(out.reader, file.open_reader(cache));
  out.batch_type = DType::make_struct({"value"}, {t}, false);
  out.wrap = true;
  return out;
}

Result<std::unique_ptr<Scan>> start_file_scan(std::shared_ptr<const VortexFile> file,
                                              const ScanOptions& options) {
  auto s = std::make_unique<FileScan>(std::move(file), options);
  OC_TRY(s->init());
  return std::unique_ptr<Scan>(std::move(s));
}

}  // namespace oc::format
