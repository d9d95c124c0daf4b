// SPDX-License-Identifier: Apache-2.0
#include "format/reader.hpp"

#include <algorithm>

#include "config/defaults.hpp"
#include "format/decode.hpp"

namespace oc::format {

Result<std::shared_ptr<VortexFile>> VortexFile::open(std::shared_ptr<SegmentSource> source) {
  register_default_encodings();
  auto footer = read_footer(*source);
  if (!footer.ok()) return std::move(footer.error()).with_context("opening " + source->name());
  return std::shared_ptr<VortexFile>(new VortexFile(std::move(source), std::move(footer).value()));
}

Result<std::shared_ptr<VortexFile>> VortexFile::open_path(const std::string& path) {
  OC_ASSIGN_OR_RETURN(auto source, open_local_file(path));
  return open(std::move(source));
}

Result<std::unique_ptr<LayoutReader>> VortexFile::open_reader(SegmentCache& cache) const {
  return make_layout_reader(footer_.layout, footer_.dtype, cache);
}

namespace {

class FileScan final : public Scan {
 public:
  FileScan(std::shared_ptr<const VortexFile> file, ScanOptions opts)
      : file_(std::move(file)), opts_(std::move(opts)), cache_(file_->source_ptr(), file_->footer()) {}

  Result<void> init() {
    const auto& t = file_->dtype();
    if (t->kind == TypeKind::struct_ && file_->footer().layout->encoding == "vortex.struct") {
      std::vector<std::string> cols = opts_.columns;
      if (cols.empty()) cols = t->names;
      OC_ASSIGN_OR_RETURN(reader_, make_projected_struct_reader(file_->footer().layout, t, cols, cache_));
      dtype_ = reader_->dtype();
      if (dtype_->nullable) {
        std::vector<DTypePtr> fields;
        for (const auto& f : dtype_->children) fields.push_back(f->with_nullable(true));
        dtype_ = DType::make_struct(dtype_->names, std::move(fields), false);
      }
      wrap_ = false;
    } else {
      // A file whose root is not a struct scans as one column named "value".
      OC_EXPECT(opts_.columns.empty() || (opts_.columns.size() == 1 && opts_.columns[0] == "value"),
                not_found, "file of type {} has only the column 'value'", t->to_string());
      OC_ASSIGN_OR_RETURN(reader_, file_->open_reader(cache_));
      dtype_ = DType::make_struct({"value"}, {t}, false);
      wrap_ = true;
    }
    const uint64_t rows = reader_->row_count();
    begin_ = 0;
    end_ = rows;
    if (opts_.row_range) {
      OC_EXPECT(opts_.row_range->first <= opts_.row_range->second && opts_.row_range->second <= rows,
                invalid, "row range [{}, {}) is outside the file's {} rows", opts_.row_range->first,
                opts_.row_range->second, rows);
      begin_ = opts_.row_range->first;
      end_ = opts_.row_range->second;
    }
    reader_->plan_rows(begin_, end_);
    // Batches never straddle a chunk boundary of any projected column, so each batch slices
    // exactly one decoded chunk per column (Vortex's split-by-layout).
    std::vector<uint64_t> points;
    reader_->collect_splits(0, points);
    points.push_back(begin_);
    points.push_back(end_);
    std::sort(points.begin(), points.end());
    points.erase(std::unique(points.begin(), points.end()), points.end());
    for (size_t i = 0; i + 1 < points.size(); ++i) {
      uint64_t b = std::max(points[i], begin_), e = std::min(points[i + 1], end_);
      if (b >= e) continue;
      const uint64_t step = opts_.batch_rows ? opts_.batch_rows : e - b;
      for (uint64_t s = b; s < e; s += step) splits_.emplace_back(s, std::min(e, s + step));
    }
    return {};
  }

  Result<std::optional<ColumnPtr>> next() override {
    if (next_ >= splits_.size()) return std::optional<ColumnPtr>();
    // Fetch this split's segments and those of the next few in one coalesced batch.
    if (next_ >= prefetched_) {
      std::vector<uint32_t> ids;
      const size_t upto = std::min(splits_.size(), next_ + defaults().scan_readahead_splits);
      for (size_t i = next_; i < upto; ++i) reader_->collect_segments(splits_[i].first, splits_[i].second, ids);
      std::sort(ids.begin(), ids.end());
      ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
      OC_TRY(cache_.prefetch(ids));
      stats_.segments_read += ids.size();
      prefetched_ = upto;
    }
    const auto [b, e] = splits_[next_++];
    OC_ASSIGN_OR_RETURN(ColumnPtr col, reader_->read(b, e));
    if (wrap_) {
      auto s = std::make_shared<Column>();
      s->dtype = dtype_;
      s->length = col->length;
      s->children.push_back(std::move(col));
      col = std::move(s);
    } else if (col->dtype->nullable) {
      // A record batch cannot hold nulls of the root struct; push them into the fields.
      OC_ASSIGN_OR_RETURN(col, push_struct_nulls(col));
    }
    ++stats_.batches;
    stats_.rows += col->length;
    return std::optional<ColumnPtr>(std::move(col));
  }

  const DTypePtr& dtype() const override { return dtype_; }
  ScanStats stats() const override { return stats_; }

 private:
  Result<ColumnPtr> push_struct_nulls(const ColumnPtr& c) const {
    auto out = std::make_shared<Column>(*c);
    out->dtype = dtype_;
    out->validity = Buffer();
    out->null_count = 0;
    out->children.clear();
    for (const auto& f : c->children) {
      ColumnPtr child = slice(f, c->offset, c->length);
      Buffer bits = make_bitmap(c->length, false);
      for (uint64_t i = 0; i < c->length; ++i) {
        if (c->is_valid(i) && child->is_valid(i)) bitmap_set(bits.mutable_data(), i, true);
      }
      out->children.push_back(with_validity(child, std::move(bits), f->dtype->with_nullable(true)));
    }
    out->offset = 0;
    return ColumnPtr(std::move(out));
  }

  std::shared_ptr<const VortexFile> file_;
  ScanOptions opts_;
  SegmentCache cache_;
  std::unique_ptr<LayoutReader> reader_;
  DTypePtr dtype_;
  bool wrap_ = false;
  uint64_t begin_ = 0, end_ = 0;
  std::vector<std::pair<uint64_t, uint64_t>> splits_;
  size_t next_ = 0, prefetched_ = 0;
  ScanStats stats_;
};

}  // namespace

Result<std::unique_ptr<Scan>> VortexFile::scan(const ScanOptions& options) const {
  auto s = std::make_unique<FileScan>(shared_from_this(), options);
  OC_TRY(s->init());
  return std::unique_ptr<Scan>(std::move(s));
}

}  // namespace oc::format
