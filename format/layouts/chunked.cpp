// SPDX-License-Identifier: Apache-2.0
// vortex.chunked: row chunks of the parent's dtype, read one after another.
#include <algorithm>
#include <iterator>
#include <numeric>
#include <optional>
#include <utility>

#include "config/defaults.hpp"
#include "format/array_tree.hpp"
#include "format/compressed_eval.hpp"
#include "format/decode.hpp"
#include "format/expr_eval.hpp"
#include "format/layouts/layouts.hpp"
#include "format/parallel.hpp"
#include "format/proto/layouts.pb.h"
#include "format/scan_profile.hpp"
#include "format/string_views.hpp"

namespace oc::format::layouts {
namespace {

class ChunkedReader final : public LayoutReader {
 public:
  ChunkedReader(LayoutPtr l, DTypePtr t, SegmentCache& c,
                std::vector<std::unique_ptr<LayoutReader>> kids)
      : LayoutReader(std::move(l), std::move(t), c), chunks_(std::move(kids)) {
    starts_.push_back(0);
    for (const auto& k : chunks_) starts_.push_back(starts_.back() + k->row_count());
  }

  void collect_splits(uint64_t base, std::vector<uint64_t>& out) const override {
    for (size_t i = 0; i < chunks_.size(); ++i) chunks_[i]->collect_splits(base + starts_[i], out);
  }
  std::vector<uint64_t> independent_starts() const override {
    std::vector<uint64_t> out;
    for (size_t i = 0; i < chunks_.size(); ++i) {
      for (uint64_t s : chunks_[i]->independent_starts()) out.push_back(starts_[i] + s);
    }
    if (out.empty()) out.push_back(0);
    return out;
  }
  void release_before(uint64_t row) override {
    // From where the last release left off (a walk from chunk 0 every time is quadratic in
    // chunks); a scan further back starts the walk again at its chunk.
    if (row < starts_[released_]) released_ = chunk_of(row);
    for (; released_ < chunks_.size() && starts_[released_ + 1] <= row; ++released_)
      chunks_[released_]->release();
    if (released_ < chunks_.size()) chunks_[released_]->release_before(row - starts_[released_]);
  }
  void collect_segments(uint64_t begin, uint64_t end, std::vector<uint32_t>& out) const override {
    for_each_overlap(begin, end, [&](size_t i, uint64_t b, uint64_t e) {
      chunks_[i]->collect_segments(b, e, out);
    });
  }
  Result<ColumnPtr> read(uint64_t begin, uint64_t end) override {
    std::vector<ColumnPtr> parts;
    Result<void> status;
    for_each_overlap(begin, end, [&](size_t i, uint64_t b, uint64_t e) {
      if (!status.ok()) return;
      auto r = chunks_[i]->read(b, e);
      if (!r.ok())
        status = std::move(r.error()).with_context(fmt::format("chunk {}", i));
      else
        parts.push_back(std::move(r).value());
    });
    OC_TRY(status);
    if (parts.empty()) return make_all_null(dtype_, 0);
    return concat(parts);
  }
  Result<ColumnPtr> read_to(ChunkDecoder& d, uint64_t begin, uint64_t end,
                            const std::vector<uint8_t>* keep) override {
    if (begin == end) return LayoutReader::read_to(d, begin, end, keep);
    const size_t i = chunk_of(begin);
    if (end > starts_[i + 1]) return LayoutReader::read_to(d, begin, end, keep);
    auto r = chunks_[i]->read_to(d, begin - starts_[i], end - starts_[i], keep);
    if (!r.ok()) return std::move(r.error()).with_context(fmt::format("chunk {}", i));
    return r;
  }
  Result<std::vector<uint8_t>> evaluate(const BoundExpr& pred, uint64_t begin,
                                        uint64_t end) override {
    std::vector<uint8_t> out;
    out.reserve(end - begin);
    Result<void> status;
    for_each_overlap(begin, end, [&](size_t i, uint64_t b, uint64_t e) {
      if (!status.ok()) return;
      auto r = chunks_[i]->evaluate(pred, b, e);
      if (!r.ok())
        status = std::move(r.error()).with_context(fmt::format("chunk {}", i));
      else
        out.insert(out.end(), r->begin(), r->end());
    });
    OC_TRY(status);
    return out;
  }
  Result<ColumnPtr> take(std::span<const uint64_t> rows) override {
    if (rows.empty()) return read(0, 0);
    // Rows ascend: each chunk's rows are one run of them, rebased to the chunk.
    std::vector<ColumnPtr> parts;
    std::vector<uint64_t> local;
    std::optional<Error> failed;  // the first chunk that failed, once the others had their turn
    for (size_t at = 0; at < rows.size();) {
      const auto i = static_cast<size_t>(
          std::upper_bound(starts_.begin(), starts_.end(), rows[at]) - starts_.begin() - 1);
      local.clear();
      for (; at < rows.size() && rows[at] < starts_[i + 1]; ++at)
        local.push_back(rows[at] - starts_[i]);
      auto r = chunks_[i]->take(local);
      if (!r.ok()) {
        failed = std::move(r.error()).with_context(fmt::format("chunk {}", i));
        if (!cache_.has_pending()) return std::move(*failed);
        continue;
      }
      parts.push_back(std::move(r).value());
    }
    if (failed) return std::move(*failed);
    return concat(parts);
  }
  void collect_zone_readers(uint64_t base, std::vector<ZoneMapRef>& out) override {
    for (size_t i = 0; i < chunks_.size(); ++i)
      chunks_[i]->collect_zone_readers(base + starts_[i], out);
  }
  void plan_rows(std::span<const RowWindow> ranges) override {
    for (size_t i = 0; i < chunks_.size(); ++i) {
      std::vector<RowWindow> mine;
      for (const RowWindow& w : ranges) {
        const uint64_t b = std::max(w.begin, starts_[i]), e = std::min(w.end, starts_[i + 1]);
        if (b < e) mine.push_back({b - starts_[i], e - starts_[i]});
      }
      chunks_[i]->plan_rows(mine);
    }
  }
  void prefer_strings(StringLayout strings) override {
    for (auto& c : chunks_) c->prefer_strings(strings);
  }
  void release() override {
    for (auto& c : chunks_) c->release();
  }

 private:
  // The chunk holding row @p row (the last chunk for a row at or past the end; 0 with none).
  size_t chunk_of(uint64_t row) const {
    auto it = std::upper_bound(starts_.begin(), starts_.end(), row);
    return static_cast<size_t>(std::max<ptrdiff_t>(0, it - starts_.begin() - 1));
  }
  template <class F>
  void for_each_overlap(uint64_t begin, uint64_t end, F&& f) const {
    for (size_t i = chunk_of(begin); i < chunks_.size() && starts_[i] < end; ++i) {
      const uint64_t b = std::max(begin, starts_[i]) - starts_[i];
      const uint64_t e = std::min(end, starts_[i + 1]) - starts_[i];
      if (e > b || (begin == end && chunks_.size() == 1)) f(i, b, e);
    }
  }
  std::vector<std::unique_ptr<LayoutReader>> chunks_;
  std::vector<uint64_t> starts_;
  size_t released_ = 0;  // chunks before this one were released by release_before
};

}  // namespace

Result<std::unique_ptr<LayoutReader>> chunked(const LayoutPtr& l, const DTypePtr& t,
                                              SegmentCache& cache, uint32_t depth) {
  std::vector<std::unique_ptr<LayoutReader>> kids;
  uint64_t rows = 0;
  for (const auto& c : l->children) {
    OC_ASSIGN_OR_RETURN(auto k, make_layout_reader(c, t, cache, depth + 1));
    rows += k->row_count();
    kids.push_back(std::move(k));
  }
  OC_EXPECT(rows == l->row_count, corrupt, "chunked layout of {} rows has chunks totalling {}",
            l->row_count, rows);
  return std::unique_ptr<LayoutReader>(
      std::make_unique<ChunkedReader>(l, t, cache, std::move(kids)));
}

}  // namespace oc::format::layouts
