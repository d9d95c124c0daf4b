// SPDX-License-Identifier: Apache-2.0
// vortex.dict: [values, codes]: codes decoded, then values gathered (or a filter evaluated once per
// value).
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

class DictReader final : public LayoutReader {
 public:
  DictReader(LayoutPtr l, DTypePtr t, SegmentCache& c, std::unique_ptr<LayoutReader> values,
             std::unique_ptr<LayoutReader> codes)
      : LayoutReader(std::move(l), std::move(t), c),
        values_(std::move(values)),
        codes_(std::move(codes)) {}

  void collect_splits(uint64_t base, std::vector<uint64_t>& out) const override {
    codes_->collect_splits(base, out);
  }
  std::vector<uint64_t> independent_starts() const override { return codes_->independent_starts(); }
  void release_before(uint64_t row) override { codes_->release_before(row); }
  void collect_segments(uint64_t b, uint64_t e, std::vector<uint32_t>& out) const override {
    {
      std::lock_guard lock(values_mu_);
      if (!values_col_) values_->collect_segments(0, values_->row_count(), out);
    }
    codes_->collect_segments(b, e, out);
  }
  Result<ColumnPtr> read(uint64_t begin, uint64_t end) override {
    // Scans gather from the dictionary again and again, so its strings are put once in the
    // layout the rows are delivered in: views make a row 16 bytes copied instead of its value,
    // offsets a copy of the value, not of a view and then the value. (A take, which gathers a
    // few rows once, leaves the values as they are.)
    OC_ASSIGN_OR_RETURN(ColumnPtr values, load_values(/*laid_out=*/true));
    OC_ASSIGN_OR_RETURN(ColumnPtr codes, codes_->read(begin, end));
    auto out = gather(values, *codes);
    if (!out.ok())
      return std::move(out.error()).with_context(fmt::format("rows [{}, {})", begin, end));
    return out;
  }
  Result<ColumnPtr> take(std::span<const uint64_t> rows) override {
    OC_ASSIGN_OR_RETURN(ColumnPtr values, load_values(/*laid_out=*/false));
    OC_ASSIGN_OR_RETURN(ColumnPtr codes, codes_->take(rows));
    return gather(values, *codes);
  }
  void release() override { codes_->release(); }
  void plan_rows(std::span<const RowWindow> ranges) override { codes_->plan_rows(ranges); }
  void prefer_strings(StringLayout strings) override {
    strings_ = strings;
    values_->prefer_strings(strings);
  }

  // The predicate runs once per dictionary value (kept for the next call with the same
  // predicate), then each row takes its code's verdict; a null code takes the verdict on null.
  Result<std::vector<uint8_t>> evaluate(const BoundExpr& pred, uint64_t begin,
                                        uint64_t end) override {
    OC_ASSIGN_OR_RETURN(std::shared_ptr<const Verdicts> verdicts, verdicts_for(pred));
    const std::vector<uint8_t>& value_truth = verdicts->per_value;
    OC_ASSIGN_OR_RETURN(ColumnPtr codes, codes_->read(begin, end));
    std::vector<uint8_t> out(codes->length, verdicts->on_null);
    for (uint64_t i = 0; i < codes->length; ++i) {
      if (!codes->is_valid(i)) continue;
      const uint64_t code = unsigned_at(*codes, i);
      OC_EXPECT(code < value_truth.size(), corrupt,
                "dict code {} at row {} is past the {} dictionary values", code, begin + i,
                value_truth.size());
      out[i] = value_truth[code];
    }
    return out;
  }

 private:
  // The predicate's truth on each dictionary value and on a null code.
  struct Verdicts {
    const BoundExpr* pred = nullptr;
    std::vector<uint8_t> per_value;
    uint8_t on_null = static_cast<uint8_t>(Truth::null);
  };

  // The dictionary, read once for every later read and take (under values_mu_: reads of
  // independent row ranges run at the same time); with @p laid_out, its strings in the layout
  // the scan delivers. A take that reads segments in part takes every value, so that the
  // dictionary's segments join its rounds of reads and the take cache
  // (format/take_cache.hpp) like the rest.
  Result<ColumnPtr> load_values(bool laid_out) {
    std::lock_guard lock(values_mu_);
    if (!values_col_) {
      if (cache_.reads_takes_in_part()) {
        // The count is the file's word: bound the index list by the decode limit before
        // allocating 8 bytes a value (a hostile layout claimed 2^34 values).
        OC_EXPECT(values_->row_count() <= defaults().max_decoded_bytes / sizeof(uint64_t), corrupt,
                  "a dictionary of {} values: its index list alone passes max_decoded_bytes ({})",
                  values_->row_count(), defaults().max_decoded_bytes);
        std::vector<uint64_t> all(values_->row_count());
        std::iota(all.begin(), all.end(), uint64_t{0});
        OC_ASSIGN_OR_RETURN(values_col_, values_->take(all));
      } else {
        OC_ASSIGN_OR_RETURN(values_col_, values_->read(0, values_->row_count()));
      }
    }
    if (laid_out && !values_laid_out_) {
      OC_ASSIGN_OR_RETURN(values_col_, with_string_layout(values_col_, strings_));
      values_laid_out_ = true;
    }
    return values_col_;
  }
  // The values of @p codes from @p values (codes are unsigned: make_layout_reader checked
  // codes_ptype); an out-of-range code is corruption, not a caller's bad index.
  Result<ColumnPtr> gather(const ColumnPtr& values, const Column& codes) {
    OC_ASSIGN_OR_RETURN(ColumnPtr out, gather_codes(values, codes));
    if (out->dtype != dtype_) {
      auto fixed = std::make_shared<Column>(*out);
      fixed->dtype = dtype_;
      return ColumnPtr(std::move(fixed));
    }
    return out;
  }
  // The verdicts of @p pred, computed once per predicate (kept for the next call with it).
  Result<std::shared_ptr<const Verdicts>> verdicts_for(const BoundExpr& pred) {
    OC_ASSIGN_OR_RETURN(ColumnPtr values, load_values(/*laid_out=*/false));
    std::lock_guard lock(values_mu_);
    if (verdicts_ && verdicts_->pred == &pred) return verdicts_;
    auto batch_of = [](ColumnPtr c) {
      Column b;
      b.dtype = DType::make_struct({"value"}, {c->dtype}, false);
      b.length = c->length;
      b.children.push_back(std::move(c));
      return b;
    };
    auto v = std::make_shared<Verdicts>();
    v->pred = &pred;
    OC_ASSIGN_OR_RETURN(auto truth, evaluate_truth(pred, batch_of(values)));
    OC_ASSIGN_OR_RETURN(ColumnPtr null_row, make_all_null(dtype_->with_nullable(true), 1));
    OC_ASSIGN_OR_RETURN(auto on_null, evaluate_truth(pred, batch_of(null_row)));
    v->on_null = static_cast<uint8_t>(on_null[0]);
    v->per_value.resize(truth.size());
    for (size_t i = 0; i < truth.size(); ++i) v->per_value[i] = static_cast<uint8_t>(truth[i]);
    verdicts_ = std::move(v);
    return verdicts_;
  }

  std::unique_ptr<LayoutReader> values_;
  std::unique_ptr<LayoutReader> codes_;
  mutable std::mutex values_mu_;  // values_col_, values_laid_out_, verdicts_
  ColumnPtr values_col_;
  bool values_laid_out_ = false;  // values_col_'s strings are in the layout strings_ names
  std::shared_ptr<const Verdicts> verdicts_;
};

}  // namespace

Result<std::unique_ptr<LayoutReader>> dict(const LayoutPtr& l, const DTypePtr& t,
                                           SegmentCache& cache, uint32_t depth) {
  OC_EXPECT(l->children.size() == 2, corrupt, "dict layout with {} children", l->children.size());
  OC_ASSIGN_OR_RETURN(auto meta,
                      parse_metadata<pb::DictLayoutMetadata>(l->metadata, "vortex.dict layout"));
  OC_ASSIGN_OR_RETURN(PType codes_p, ptype_from(meta.codes_ptype()));
  OC_EXPECT(!ptype_is_float(codes_p) && !ptype_is_signed(codes_p), corrupt, "dict codes of type {}",
            ptype_name(codes_p));
  const bool nullable_codes = meta.has_is_nullable_codes() ? meta.is_nullable_codes() : t->nullable;
  OC_EXPECT(l->children[1]->row_count == l->row_count, corrupt,
            "dict codes have {} rows, layout {}", l->children[1]->row_count, l->row_count);
  OC_ASSIGN_OR_RETURN(auto values, make_layout_reader(l->children[0], t, cache, depth + 1));
  OC_ASSIGN_OR_RETURN(
      auto codes, make_layout_reader(l->children[1], DType::make_primitive(codes_p, nullable_codes),
                                     cache, depth + 1));
  return std::unique_ptr<LayoutReader>(
      std::make_unique<DictReader>(l, t, cache, std::move(values), std::move(codes)));
}

}  // namespace oc::format::layouts
