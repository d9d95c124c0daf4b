// SPDX-License-Identifier: Apache-2.0
// vortex.struct: [the validity of a nullable struct], then one child per field, read side by side.
#include <algorithm>
#include <atomic>
#include <iterator>
#include <memory>
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

// The struct validity read from a bool layout @p v: a row is valid where v is true (and not null).
Buffer valid_bits(const Column& v) {
  Buffer bits = make_bitmap(v.length, false);
  for (uint64_t i = 0; i < v.length; ++i) {
    if (v.is_valid(i) && bitmap_get(v.buffers[0].data(), v.offset + i))
      bitmap_set(bits.mutable_data(), i, true);
  }
  return bits;
}

class StructReader final : public LayoutReader {
 public:
  StructReader(LayoutPtr l, DTypePtr t, SegmentCache& c, std::unique_ptr<LayoutReader> validity,
               std::vector<std::unique_ptr<LayoutReader>> fields)
      : LayoutReader(std::move(l), std::move(t), c),
        validity_(std::move(validity)),
        fields_(std::move(fields)),
        field_ns_(std::make_unique<std::atomic<uint64_t>[]>(fields_.size())) {}

  void collect_splits(uint64_t base, std::vector<uint64_t>& out) const override {
    if (validity_) validity_->collect_splits(base, out);
    for (const auto& f : fields_) f->collect_splits(base, out);
    if (fields_.empty() && !validity_) out.push_back(base);
  }
  std::vector<uint64_t> independent_starts() const override {
    std::vector<const LayoutReader*> all;
    if (validity_) all.push_back(validity_.get());
    for (const auto& f : fields_) all.push_back(f.get());
    return common_independent_starts(all);
  }
  void release_before(uint64_t row) override {
    if (validity_) validity_->release_before(row);
    for (auto& f : fields_) f->release_before(row);
  }
  void collect_segments(uint64_t b, uint64_t e, std::vector<uint32_t>& out) const override {
    if (validity_) validity_->collect_segments(b, e, out);
    for (const auto& f : fields_) f->collect_segments(b, e, out);
  }
  Result<ColumnPtr> read(uint64_t begin, uint64_t end) override {
    const RowWindow window{begin, end};
    OC_ASSIGN_OR_RETURN(std::vector<ColumnPtr> one, read_each(std::span(&window, 1)));
    return std::move(one.front());
  }
  Result<std::vector<ColumnPtr>> read_each(std::span<const RowWindow> windows) override {
    uint64_t rows = 0;
    for (const RowWindow& w : windows) rows += w.size();
    // got[i][k]: field i over window k. A field's windows decode in order on one thread (its
    // readers keep the chunk one window slices for the next), while the fields run side by
    // side: a field that decodes a whole chunk at one window does not hold the others back there.
    // The fields start slowest first, by what each took last time: the pool takes items in
    // order, and a slow field started last (TPC-H lineitem's l_comment, a quarter of a scan's
    // decoding, is its last column) keeps one thread busy while the others have nothing left.
    const std::vector<size_t> order = slowest_first();
    std::vector<std::vector<ColumnPtr>> got(fields_.size());
    OC_TRY(parallel_for(fields_.size(), rows, [&](size_t k) -> Result<void> {
      const size_t i = order[k];
      const uint64_t start = monotonic_ns();
      auto r = fields_[i]->read_each(windows);
      field_ns_[i].store(monotonic_ns() - start, std::memory_order_relaxed);
      if (!r.ok())
        return std::move(r.error()).with_context(fmt::format("field '{}'", dtype_->names[i]));
      got[i] = std::move(r).value();
      return {};
    }));
    std::vector<ColumnPtr> out;
    out.reserve(windows.size());
    for (size_t k = 0; k < windows.size(); ++k) {
      auto c = std::make_shared<Column>();
      c->dtype = dtype_;
      c->length = windows[k].size();
      c->children.reserve(got.size());
      for (auto& field : got) c->children.push_back(std::move(field[k]));
      if (validity_) {
        OC_ASSIGN_OR_RETURN(ColumnPtr v, validity_->read(windows[k].begin, windows[k].end));
        out.push_back(with_validity(c, valid_bits(*v), dtype_));
        continue;
      }
      out.push_back(std::move(c));
    }
    return out;
  }
  Result<ColumnPtr> read_to(ChunkDecoder& d, uint64_t begin, uint64_t end,
                            const std::vector<uint8_t>* keep) override {
    if (validity_) return LayoutReader::read_to(d, begin, end, keep);  // nulls to push down, here
    auto c = std::make_shared<Column>();
    c->dtype = dtype_;
    c->length = keep == nullptr
                    ? end - begin
                    : static_cast<uint64_t>(std::count_if(keep->begin(), keep->end(),
                                                          [](uint8_t k) { return k != 0; }));
    std::vector<ColumnPtr> got(fields_.size());
    OC_TRY(parallel_for(fields_.size(), end - begin, [&](size_t i) -> Result<void> {
      auto r = fields_[i]->read_to(d, begin, end, keep);
      if (!r.ok())
        return std::move(r.error()).with_context(fmt::format("field '{}'", dtype_->names[i]));
      got[i] = std::move(r).value();
      return {};
    }));
    c->children = std::move(got);
    return ColumnPtr(std::move(c));
  }
  Result<ColumnPtr> take(std::span<const uint64_t> rows) override {
    auto c = std::make_shared<Column>();
    c->dtype = dtype_;
    c->length = rows.size();
    // Fields take side by side, as they read. Each runs to its end even where another failed:
    // in a take that reads segments in part, a field that failed while bytes are pending has
    // recorded what it still needs, and so has every other field, for one round of reads.
    std::vector<Result<ColumnPtr>> got(fields_.size(), Result<ColumnPtr>(ColumnPtr()));
    OC_TRY(parallel_for(fields_.size(), take_weight(rows.size()), [&](size_t i) -> Result<void> {
      got[i] = fields_[i]->take(rows);
      return {};
    }));
    std::optional<Error> failed;  // the first field that failed
    for (size_t i = 0; i < fields_.size(); ++i) {
      if (!got[i].ok()) {
        if (!failed)
          failed =
              std::move(got[i].error()).with_context(fmt::format("field '{}'", dtype_->names[i]));
        continue;
      }
      c->children.push_back(std::move(got[i]).value());
    }
    if (!validity_) return failed ? Result<ColumnPtr>(std::move(*failed)) : ColumnPtr(std::move(c));
    OC_ASSIGN_OR_RETURN(ColumnPtr v, validity_->take(rows));
    if (failed) return std::move(*failed);
    return with_validity(c, valid_bits(*v), dtype_);
  }
  void collect_zone_readers(uint64_t base, std::vector<ZoneMapRef>& out) override {
    for (auto& f : fields_) f->collect_zone_readers(base, out);
  }
  void release() override {
    if (validity_) validity_->release();
    for (auto& f : fields_) f->release();
  }
  void plan_rows(std::span<const RowWindow> ranges) override {
    if (validity_) validity_->plan_rows(ranges);
    for (auto& f : fields_) f->plan_rows(ranges);
  }
  void prefer_strings(StringLayout strings) override {
    for (auto& f : fields_) f->prefer_strings(strings);
  }

 private:
  // The fields' indices, the one that read longest last time first (index order before any
  // read, and between fields that took as long).
  std::vector<size_t> slowest_first() const {
    std::vector<size_t> order(fields_.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return field_ns_[a].load(std::memory_order_relaxed) >
             field_ns_[b].load(std::memory_order_relaxed);
    });
    return order;
  }

  std::unique_ptr<LayoutReader> validity_;
  std::vector<std::unique_ptr<LayoutReader>> fields_;
  // Nanoseconds each field's last read_each took (relaxed: an estimate for the order only).
  std::unique_ptr<std::atomic<uint64_t>[]> field_ns_;
};

Result<std::vector<std::unique_ptr<LayoutReader>>> open_fields(const LayoutNode& l, const DType& t,
                                                               std::span<const size_t> which,
                                                               size_t first, SegmentCache& cache,
                                                               uint32_t depth) {
  std::vector<std::unique_ptr<LayoutReader>> out;
  for (size_t f : which) {
    const auto& child = l.children[first + f];
    OC_EXPECT(child->row_count == l.row_count, corrupt, "field '{}' has {} rows, struct has {}",
              t.names[f], child->row_count, l.row_count);
    auto r = make_layout_reader(child, t.children[f], cache, depth + 1);
    if (!r.ok()) return std::move(r.error()).with_context(fmt::format("field '{}'", t.names[f]));
    out.push_back(std::move(r).value());
  }
  return out;
}

}  // namespace

Result<std::unique_ptr<LayoutReader>> struct_fields(const LayoutPtr& l, const DTypePtr& t,
                                                    std::span<const size_t> which,
                                                    SegmentCache& cache, uint32_t depth,
                                                    DTypePtr out_t) {
  OC_EXPECT(t->kind == TypeKind::struct_, corrupt, "vortex.struct layout for {}", t->to_string());
  const size_t nf = t->children.size();
  const size_t first = l->children.size() - nf;
  // A nullable struct carries its validity as child 0, always: vortex-data refuses one without
  // it (`nchildren == expected`), and 0.36.0 wrote such files while their statistics counted
  // nulls, so reading them as all-valid would be wrong data.
  const size_t expected = nf + (t->nullable ? 1 : 0);
  OC_EXPECT(l->children.size() == expected, corrupt,
            "struct layout has {} children, expected {} ({} fields{})", l->children.size(),
            expected, nf, t->nullable ? " and the validity of a nullable struct" : "");
  std::unique_ptr<LayoutReader> validity;
  if (first == 1) {
    OC_ASSIGN_OR_RETURN(
        validity, make_layout_reader(l->children[0], DType::make_bool(false), cache, depth + 1));
  }
  OC_ASSIGN_OR_RETURN(auto fields, open_fields(*l, *t, which, first, cache, depth));
  return std::unique_ptr<LayoutReader>(std::make_unique<StructReader>(
      l, std::move(out_t), cache, std::move(validity), std::move(fields)));
}

Result<std::unique_ptr<LayoutReader>> struct_(const LayoutPtr& l, const DTypePtr& t,
                                              SegmentCache& cache, uint32_t depth) {
  OC_EXPECT(t->kind == TypeKind::struct_, corrupt, "vortex.struct layout for {}", t->to_string());
  std::vector<size_t> all(t->children.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  return struct_fields(l, t, all, cache, depth, t);
}

}  // namespace oc::format::layouts
