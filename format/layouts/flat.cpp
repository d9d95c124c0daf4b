// SPDX-License-Identifier: Apache-2.0
// vortex.flat: one segment, one encoded array (format/decode.hpp), decoded once per read window.
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

class FlatReader final : public LayoutReader {
 public:
  FlatReader(LayoutPtr l, DTypePtr t, SegmentCache& c)
      : LayoutReader(std::move(l), std::move(t), c), wanted_{{0, row_count()}} {}

  void collect_splits(uint64_t base, std::vector<uint64_t>& out) const override {
    out.push_back(base);
  }
  std::vector<uint64_t> independent_starts() const override { return {0}; }
  void collect_segments(uint64_t, uint64_t, std::vector<uint32_t>& out) const override {
    if (!decoded_ && !tree_) out.push_back(layout_->segments[0]);
  }
  void plan_rows(std::span<const RowWindow> ranges) override {
    wanted_.assign(ranges.begin(), ranges.end());
  }
  Result<ColumnPtr> read(uint64_t begin, uint64_t end) override {
    if (!covers(begin, end)) {
      // Decode only the planned run that holds the read when the plan cuts the chunk; the whole
      // chunk otherwise.
      RowWindow rows{0, row_count()};
      for (const RowWindow& w : wanted_) {
        if (begin >= w.begin && end <= w.end) rows = w;
      }
      OC_ASSIGN_OR_RETURN(const ArrayView* tree, parsed());
      DecodeContext ctx;
      ctx.prefer_strings(strings_);
      auto col = rows.size() == row_count() ? ctx.decode(*tree, dtype_, row_count())
                                            : ctx.decode_slice(*tree, dtype_, row_count(), rows);
      if (!col.ok()) {
        return std::move(col.error()).with_context(fmt::format("segment {}", layout_->segments[0]));
      }
      decoded_ = std::move(col).value();
      decoded_from_ = rows.begin;
    }
    return slice(decoded_, begin - decoded_from_, end - begin);
  }
  Result<ColumnPtr> read_to(ChunkDecoder& d, uint64_t begin, uint64_t end,
                            const std::vector<uint8_t>* keep) override {
    OC_ASSIGN_OR_RETURN(const ArrayView* tree, parsed());
    auto col = d.decode_flat(*tree, dtype_, row_count(), {begin, end}, keep, strings_);
    if (!col.ok())
      return std::move(col.error()).with_context(fmt::format("segment {}", layout_->segments[0]));
    return col;
  }
  Result<ColumnPtr> take(std::span<const uint64_t> rows) override {
    if (decoded_ && (rows.empty() || (rows.front() >= decoded_from_ &&
                                      rows.back() < decoded_from_ + decoded_->length))) {
      std::vector<uint64_t> local(rows.size());
      for (size_t i = 0; i < rows.size(); ++i) local[i] = rows[i] - decoded_from_;
      return format::take(decoded_, local);
    }
    if (!tree_ && cache_.reads_in_part(layout_->segments[0])) return take_in_part(rows);
    // Only the taken rows are decoded, so the result is not kept for later reads.
    OC_ASSIGN_OR_RETURN(const ArrayView* tree, parsed());
    DecodeContext ctx;
    ctx.prefer_strings(strings_);
    auto col = ctx.decode_take(*tree, dtype_, row_count(), rows);
    if (!col.ok()) {
      return std::move(col.error()).with_context(fmt::format("segment {}", layout_->segments[0]));
    }
    return col;
  }
  // On the compressed form where format/compressed_eval.hpp can; otherwise decode and evaluate.
  Result<std::vector<uint8_t>> evaluate(const BoundExpr& pred, uint64_t begin,
                                        uint64_t end) override {
    if (!covers(begin, end)) {
      OC_ASSIGN_OR_RETURN(const ArrayView* tree, parsed());
      DecodeContext ctx;
      auto truth = evaluate_compressed(pred, *tree, dtype_, row_count(), {begin, end}, ctx);
      if (!truth.ok()) {
        return std::move(truth.error())
            .with_context(fmt::format("segment {}", layout_->segments[0]));
      }
      if (*truth) return std::move(**truth);
    }
    return LayoutReader::evaluate(pred, begin, end);
  }
  void release() override {
    decoded_.reset();
    tree_.reset();
    segment_ = Buffer();
    partial_tree_.reset();
    partial_.reset();
  }

 private:
  // One round of a take that reads the segment in part (format/partial_segment.hpp): the array
  // tree at its end first, then the bytes the rows need. While bytes are pending the round's
  // result is an error that the next round replaces.
  Result<ColumnPtr> take_in_part(std::span<const uint64_t> rows) {
    const uint32_t id = layout_->segments[0];
    const auto not_yet = [id] {
      return OC_ERROR(Errc::io, "segment {}: bytes still to be read", id);
    };
    if (!partial_) {
      OC_ASSIGN_OR_RETURN(partial_, cache_.partial(id));
    }
    if (!partial_tree_) {
      // Layout in format/array_tree.hpp: [buffers][pad][ArrayTree FlatBuffer][u32 LE fb_len].
      const uint64_t n = partial_->range().length;
      OC_EXPECT(n >= 4, corrupt, "segment {}: flat segment of {} bytes has no array footer", id, n);
      const uint64_t tail = std::min(n, defaults().take_partial_tail_bytes);
      if (!partial_->need(n - tail, tail)) return not_yet();
      const uint32_t fb_len = load_le<uint32_t>(partial_->data() + n - 4);
      // A length past the segment is reported by the parse below.
      if (fb_len <= n - 4 && !partial_->need(n - 4 - fb_len, fb_len)) return not_yet();
      auto tree = parse_array_tree(partial_->bytes(), cache_.footer().array_specs);
      if (!tree.ok()) return std::move(tree.error()).with_context(fmt::format("segment {}", id));
      partial_tree_ = std::move(tree).value();
    }
    DecodeContext ctx;
    ctx.prefer_strings(strings_);
    ctx.read_in_part(partial_.get());
    auto col = ctx.decode_take(*partial_tree_, dtype_, row_count(), rows);
    if (partial_->has_pending()) return not_yet();
    if (!col.ok()) return std::move(col.error()).with_context(fmt::format("segment {}", id));
    return col;
  }

  bool covers(uint64_t begin, uint64_t end) const {
    return decoded_ && begin >= decoded_from_ && end <= decoded_from_ + decoded_->length;
  }
  // The segment's array tree, parsed on first use and kept until release(), so that several
  // reads and evaluations of one chunk fetch it once.
  Result<const ArrayView*> parsed() {
    if (!tree_) {
      OC_ASSIGN_OR_RETURN(segment_, cache_.take(layout_->segments[0]));
      OC_ASSIGN_OR_RETURN(ArrayView tree, parse_array_tree(segment_, cache_.footer().array_specs));
      tree_ = std::move(tree);
    }
    return &*tree_;
  }

  std::vector<RowWindow> wanted_;
  Buffer segment_;
  std::optional<ArrayView> tree_;
  std::shared_ptr<PartialSegment> partial_;  // a take's segment read in part, and its tree
  std::optional<ArrayView> partial_tree_;
  ColumnPtr decoded_;
  uint64_t decoded_from_ = 0;  // row of this chunk at which decoded_ starts
};

}  // namespace

Result<std::unique_ptr<LayoutReader>> flat(const LayoutPtr& l, const DTypePtr& t,
                                           SegmentCache& cache, uint32_t depth) {
  OC_EXPECT(l->segments.size() == 1 && l->children.empty(), corrupt,
            "flat layout with {} segments and {} children", l->segments.size(), l->children.size());
  (void)depth;
  return std::unique_ptr<LayoutReader>(std::make_unique<FlatReader>(l, t, cache));
}

}  // namespace oc::format::layouts
