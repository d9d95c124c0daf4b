// SPDX-License-Identifier: Apache-2.0
// The file scan. A split is a row range that no chunk boundary of any read column cuts, so each
// split slices exactly one decoded chunk per column (Vortex's split-by-layout). With a filter a
// split goes through two phases: the filter's columns are fetched, decoded and evaluated first,
// and the remaining projected columns are fetched only for splits where some row survived, so
// a selective filter saves their I/O as well as their decoding.
#include "format/scan.hpp"

#include <algorithm>
#include <chrono>
#include <deque>
#include <numeric>
#include <tuple>

#include "config/defaults.hpp"
#include "format/expr_bind.hpp"
#include "format/expr_eval.hpp"
#include "format/expr_parser.hpp"
#include "format/parallel.hpp"
#include "format/prune.hpp"
#include "format/scan_profile.hpp"
#include "format/string_views.hpp"

namespace oc::format {
namespace {

// Adds the time from construction to destruction to a counter.
class StageTimer {
 public:
  explicit StageTimer(uint64_t& into) : into_(into), start_(monotonic_ns()) {}
  ~StageTimer() { into_ += monotonic_ns() - start_; }
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

// The conjuncts of a filter on one top-level column that the output does not carry: evaluated
// by the column's own reader, which can do it on dictionary values or compressed segments.
struct Pushdown {
  std::string field;
  std::unique_ptr<LayoutReader> reader;
  BoundExpr pred;  // bound against {field: type}
};

std::vector<ExprPtr> conjuncts_of(const ExprPtr& e) {
  if (e->kind == ExprKind::and_) return e->children;
  return {e};
}

ExprPtr all_of(std::vector<ExprPtr> parts) {
  if (parts.size() == 1) return parts[0];
  const uint32_t pos = parts[0]->pos;
  return Expr::make(ExprKind::and_, std::move(parts), pos);
}

class FileScan final : public Scan {
 public:
  FileScan(std::shared_ptr<const VortexFile> file, ScanOptions opts)
      : file_(std::move(file)),
        opts_(std::move(opts)),
        cache_(file_->source_ptr(), file_->footer()) {}

  Result<void> init() {
    StageTimer t(stats_.plan_ns);
    OC_ASSIGN_OR_RETURN(TableReader all, open_table_reader(*file_, opts_.columns, cache_));
    dtype_ = all.batch_type;
    const uint64_t rows = all.reader->row_count();
    begin_ = 0;
    end_ = rows;
    if (opts_.row_range) {
      const auto [first, second] = *opts_.row_range;
      OC_EXPECT(first <= second, invalid, "row range {}:{} is reversed (end before begin)", first,
                second);
      OC_EXPECT(second <= rows, invalid, "row range {}:{} ends past the file's {} rows", first,
                second, rows);
      begin_ = opts_.row_range->first;
      end_ = opts_.row_range->second;
    }
    stats_.rows_scanned = end_ - begin_;
    std::vector<RowWindow> keep = {{begin_, end_}};
    std::vector<std::string> rest = dtype_->names;
    if (!opts_.filter.empty()) {
      OC_ASSIGN_OR_RETURN(keep, plan_filter(rest));
    }
    if (!rest.empty() || (!filter_.reader && pushdowns_.empty())) {
      OC_ASSIGN_OR_RETURN(rest_, open_table_reader(*file_, rest, cache_));
    }
    // A record batch holds no nulls of its own: a nullable root's are pushed into its fields
    // on the host (TableReader::to_batch), which a chunk decoder's memory may not allow.
    OC_EXPECT(!opts_.chunk_decoder || !file_->dtype()->nullable, unsupported,
              "a scan into other memory of a file whose root {} is nullable",
              file_->dtype()->to_string());
    for (LayoutReader* r : readers()) {
      r->plan_rows(keep);
      r->prefer_strings(opts_.strings);
    }
    // Splits: cut at every chunk boundary of every column read and at the pruning boundaries,
    // keep the pieces inside the surviving ranges.
    std::vector<uint64_t> points;
    for (LayoutReader* r : readers()) r->collect_splits(0, points);
    for (const RowWindow& w : keep) {
      points.push_back(w.begin);
      points.push_back(w.end);
    }
    std::sort(points.begin(), points.end());
    points.erase(std::unique(points.begin(), points.end()), points.end());
    // The batch count is bounded before any split is stored: a tiny batch_rows over a large
    // file would otherwise cost memory in proportion to the file.
    const uint64_t batch_rows = opts_.batch_rows ? opts_.batch_rows : defaults().scan_batch_rows;
    const uint64_t max_pieces = defaults().plan_max_pieces;
    size_t k = 0;
    for (size_t i = 0; i + 1 < points.size(); ++i) {
      const uint64_t b = points[i], e = points[i + 1];
      while (k < keep.size() && keep[k].end <= b) ++k;
      if (k == keep.size() || keep[k].begin > b || e > keep[k].end) continue;
      const uint64_t step = batch_rows ? batch_rows : e - b;
      const uint64_t pieces = (e - b) / step + ((e - b) % step != 0);
      OC_EXPECT(pieces <= max_pieces - splits_.size(), invalid,
                "batch_rows {} cuts this scan into more than {} batches (plan_max_pieces); use "
                "larger batches",
                batch_rows, max_pieces);
      for (uint64_t s = b; s < e; s += step) splits_.emplace_back(s, std::min(e, s + step));
    }
    if (opts_.row_numbers) OC_TRY(add_row_number_field());
    group_splits();
    return {};
  }

  Result<std::optional<ColumnPtr>> next_batch() override {
    while (true) {
      if (!ready_.empty()) {
        Result<std::optional<ColumnPtr>> r = std::move(ready_.front());
        ready_.pop_front();
        if (!r.ok()) return r;
        if (!*r) continue;  // no row of that split survived the filter
        ++stats_.batches;
        stats_.rows += (**r)->length;
        return r;
      }
      if (next_ == splits_.size()) return std::optional<ColumnPtr>();
      OC_TRY(decode_window());
    }
  }

  const DTypePtr& dtype() const override { return dtype_; }
  StringLayout strings() const override { return opts_.strings; }
  ScanStats stats() const override {
    ScanStats s = stats_;
    s.fetch_ns += cache_.take_wait_ns();  // decoding waited for segments read behind it
    s.segments_read = cache_.segments_fetched();
    s.bytes_read = cache_.bytes_fetched();
    return s;
  }

 private:
  // Below one surviving row in this many, the other columns are taken rather than read.
  static constexpr uint64_t kTakeBelow = 4;

  // Decodes the next window of splits into ready_, in order. Splits in different independent
  // groups (split_group_) share no decoding state, so each group's run of splits in the window
  // decodes on a thread of its own while the others decode theirs; a run decodes its splits one
  // after another (and each split's columns side by side). The window is
  // ScanOptions::splits_in_flight splits, by default one split per decode thread at first, for a
  // quick first batch, then scan_readahead_splits per thread: at most that many batches wait
  // decoded.
  Result<void> decode_window() {
    const size_t threads = decode_threads();
    const size_t per_window = opts_.splits_in_flight != 0 ? opts_.splits_in_flight
                              : next_ == 0                ? threads
                                           : threads * defaults().scan_readahead_splits;
    const size_t from = next_, to = std::min(splits_.size(), from + per_window);
    // Nothing before this window is read again: the readers may drop what they hold of it.
    for (LayoutReader* r : readers()) r->release_before(splits_[from].first);
    OC_TRY(prefetch_ahead(to));
    std::vector<std::pair<size_t, size_t>> runs;  // [first, last) splits of one group each
    uint64_t rows = 0;
    for (size_t k = from; k < to; ++k) {
      if (k == from || split_group_[k] != split_group_[k - 1]) runs.emplace_back(k, k);
      runs.back().second = k + 1;
      rows += splits_[k].second - splits_[k].first;
    }
    std::vector<std::optional<Result<std::optional<ColumnPtr>>>> out(to - from);
    std::vector<ScanStats> stats(runs.size());
    const Result<void> pool = parallel_for(runs.size(), rows, [&](size_t r) -> Result<void> {
      if (threads > 1 && reads_whole_splits() &&
          read_run(runs[r].first, runs[r].second, stats[r], &out[runs[r].first - from]))
        return {};
      for (size_t k = runs[r].first; k < runs[r].second; ++k) {
        out[k - from] = catch_all("scan", [&] { return decode_split(k, stats[r]); });
        if (!out[k - from]->ok()) break;  // the splits after it are not delivered
      }
      return {};
    });
    for (const ScanStats& s : stats) {
      stats_.fetch_ns += s.fetch_ns;
      stats_.filter_ns += s.filter_ns;
      stats_.decode_ns += s.decode_ns;
    }
    next_ = to;
    for (auto& r : out) {
      // A split is missing only after one before it in its run failed, or when the pool could
      // not run its run (an allocation failed there): either way the scan ends here.
      if (!r && pool.ok())
        r = Result<std::optional<ColumnPtr>>(OC_ERROR(Errc::io, "a split was not decoded"));
      ready_.push_back(r ? std::move(*r) : Result<std::optional<ColumnPtr>>(pool.error()));
      if (!ready_.back().ok()) {
        next_ = splits_.size();  // a scan ends at its first error
        break;
      }
    }
    return {};
  }

  // Whether a split's batch is its columns as rest_'s reader reads them: no filter, host memory.
  bool reads_whole_splits() const { return !filtering() && !opts_.chunk_decoder && rest_.reader; }

  // Splits [@p first, @p last) of one group into @p out, for a scan that reads_whole_splits()
  // on more than one thread: read together (LayoutReader::read_each), so that the fields decode
  // side by side over the whole run, not with a wait at every split (SF 1 lineitem, 2 threads:
  // about a tenth less time). On one thread, split by split is faster: a batch's columns are
  // still in cache when it is assembled. false when the read failed: the caller decodes the
  // splits one by one then, so that the batches before the failing split still arrive.
  bool read_run(size_t first, size_t last, ScanStats& stats,
                std::optional<Result<std::optional<ColumnPtr>>>* out) {
    StageTimer t(stats.decode_ns);
    std::vector<RowWindow> windows;
    for (size_t k = first; k < last; ++k) windows.push_back({splits_[k].first, splits_[k].second});
    auto cols = catch_all("scan", [&] { return rest_.reader->read_each(windows); });
    if (!cols.ok()) return false;
    for (size_t k = first; k < last; ++k) {
      out[k - first] = catch_all("scan", [&]() -> Result<std::optional<ColumnPtr>> {
        OC_ASSIGN_OR_RETURN(ColumnPtr rest, rest_.to_batch(std::move((*cols)[k - first])));
        const RowWindow& w = windows[k - first];
        return batch_of(nullptr, rest, false, Mask{}, w.begin, w.size());
      });
      if (!out[k - first]->ok()) break;  // the splits after it are not delivered
    }
    return true;
  }

  // The batch of the split of @p len rows from row @p first from the filter reader's columns
  // @p filtered and the others' @p rest (already filtered when @p rest_filtered), with strings
  // as the scan delivers them.
  Result<std::optional<ColumnPtr>> batch_of(const ColumnPtr& filtered, const ColumnPtr& rest,
                                            bool rest_filtered, const Mask& mask, uint64_t first,
                                            uint64_t len) {
    OC_ASSIGN_OR_RETURN(ColumnPtr batch, assemble(filtered, rest, rest_filtered, mask, first, len));
    if (opts_.chunk_decoder) OC_TRY(opts_.chunk_decoder->finish_split());
    // Decoders give strings in the layout that was cheapest for them; the batch has one.
    OC_ASSIGN_OR_RETURN(batch, with_string_layout(batch, opts_.strings));
    return std::optional<ColumnPtr>(std::move(batch));
  }

  // Split @p k as a batch, or nullopt when the filter kept none of its rows. Runs on any
  // thread, beside the splits of other groups; @p stats receives its stages.
  Result<std::optional<ColumnPtr>> decode_split(size_t k, ScanStats& stats) {
    const auto [b, e] = splits_[k];
    ColumnPtr filtered;
    Mask mask;
    if (filtering()) {
      StageTimer t(stats.filter_ns);
      OC_ASSIGN_OR_RETURN(filtered, evaluate_split(b, e, mask));
      if (mask.count == 0) return std::optional<ColumnPtr>();
    }
    ColumnPtr rest;
    bool rest_filtered = false;
    if (rest_.reader) {
      if (filtering()) {
        // Phase two: this split's remaining columns, now that a row is known to survive.
        std::vector<uint32_t> ids;
        rest_.reader->collect_segments(b, e, ids);
        sort_unique(ids);
        StageTimer t(stats.fetch_ns);
        OC_TRY(cache_.prefetch(ids));
      }
      StageTimer t(stats.decode_ns);
      ColumnPtr col;
      if (opts_.chunk_decoder) {
        OC_ASSIGN_OR_RETURN(col, rest_.reader->read_to(*opts_.chunk_decoder, b, e,
                                                       filtering() ? &mask.keep : nullptr));
        rest_filtered = true;
      } else if (filtering() && mask.count * kTakeBelow < e - b) {
        // Few survivors: decode just their rows where the encodings allow.
        OC_ASSIGN_OR_RETURN(col, rest_.reader->take(kept_rows(mask, b)));
        rest_filtered = true;
      } else {
        OC_ASSIGN_OR_RETURN(col, rest_.reader->read(b, e));
      }
      OC_ASSIGN_OR_RETURN(rest, rest_.to_batch(std::move(col)));
    }
    StageTimer t(stats.decode_ns);
    return batch_of(filtered, rest, rest_filtered, mask, b, e - b);
  }

  // Numbers each split by its independent group: splits between two rows where every reader's
  // columns all start a chunk (LayoutReader::independent_starts) share a group.
  void group_splits() {
    const std::vector<LayoutReader*> all = readers();
    const std::vector<uint64_t> common =
        common_independent_starts(std::vector<const LayoutReader*>(all.begin(), all.end()));
    split_group_.resize(splits_.size());
    size_t group = 0, at = 0;
    for (size_t k = 0; k < splits_.size(); ++k) {
      // Past every independent start at or below the split's first row: a new group each.
      while (at < common.size() && common[at] <= splits_[k].first) {
        ++at;
        ++group;
      }
      split_group_[k] = group;
    }
  }

  bool filtering() const { return filter_.reader || !pushdowns_.empty(); }

  // Whether output column @p name comes from the filter's reader (not from rest_).
  bool from_filter(const std::string& name) const {
    if (!filter_.reader) return false;
    const auto& names = filter_.batch_type->names;
    const auto& rest = rest_.reader ? rest_.batch_type->names : std::vector<std::string>{};
    return std::find(names.begin(), names.end(), name) != names.end() &&
           std::find(rest.begin(), rest.end(), name) == rest.end();
  }

  // Binds the filter, splits it between pushdowns and batch evaluation, drops from @p rest the
  // columns the filter's reader delivers, and prunes. @return the row ranges that may match.
  Result<std::vector<RowWindow>> plan_filter(std::vector<std::string>& rest) {
    OC_ASSIGN_OR_RETURN(ExprPtr parsed, parse_expr(opts_.filter));
    OC_ASSIGN_OR_RETURN(TableReader whole, open_table_reader(*file_, {}, cache_));
    const DTypePtr& schema = whole.batch_type;
    // Bind the whole filter first, so that errors point into it and name every column.
    OC_ASSIGN_OR_RETURN(BoundExpr full, format::bind(*parsed, *schema, opts_.filter));
    const bool root_nulls = file_->dtype()->nullable && !whole.wrap;

    // A conjunct on one top-level column outside the output is pushed down, with every other
    // conjunct on that column; the rest is evaluated on decoded batches.
    std::vector<ExprPtr> parts = conjuncts_of(parsed);
    std::vector<BoundExpr> bound_parts;
    for (const auto& p : parts) {
      OC_ASSIGN_OR_RETURN(BoundExpr b, format::bind(*p, *schema, opts_.filter));
      bound_parts.push_back(std::move(b));
    }
    auto is_output = [&](const std::string& n) {
      return std::find(dtype_->names.begin(), dtype_->names.end(), n) != dtype_->names.end();
    };
    std::vector<std::string> batch_fields;
    for (const auto& b : bound_parts) {
      const bool single = b.columns.size() == 1 && b.columns[0].path.size() == 1;
      if (single && !is_output(b.columns[0].path[0]) && !root_nulls) continue;
      for (const auto& c : b.columns) batch_fields.push_back(c.path[0]);
    }
    std::vector<ExprPtr> batch_parts;
    std::vector<std::pair<std::string, std::vector<ExprPtr>>> groups;
    for (size_t i = 0; i < parts.size(); ++i) {
      const auto& cols = bound_parts[i].columns;
      const bool batch =
          cols.empty() || std::any_of(cols.begin(), cols.end(), [&](const BoundColumn& c) {
            return std::find(batch_fields.begin(), batch_fields.end(), c.path[0]) !=
                   batch_fields.end();
          });
      if (batch) {
        batch_parts.push_back(parts[i]);
        continue;
      }
      const std::string& f = cols[0].path[0];
      auto g =
          std::find_if(groups.begin(), groups.end(), [&](const auto& x) { return x.first == f; });
      if (g == groups.end())
        groups.push_back({f, {parts[i]}});
      else
        g->second.push_back(parts[i]);
    }
    pushdowns_.reserve(groups.size());  // readers keep pointers to their predicate
    for (auto& [field, exprs] : groups) {
      Pushdown p;
      p.field = field;
      OC_ASSIGN_OR_RETURN(p.reader, open_field_reader(field));
      const auto& names = schema->names;
      const size_t i =
          static_cast<size_t>(std::find(names.begin(), names.end(), field) - names.begin());
      auto one = DType::make_struct({field}, {schema->children[i]}, false);
      OC_ASSIGN_OR_RETURN(p.pred, format::bind(*all_of(std::move(exprs)), *one, opts_.filter));
      pushdowns_.push_back(std::move(p));
    }
    if (!batch_parts.empty()) {
      std::vector<std::string> fields;
      for (const auto& n : schema->names) {
        if (std::find(batch_fields.begin(), batch_fields.end(), n) != batch_fields.end())
          fields.push_back(n);
      }
      OC_ASSIGN_OR_RETURN(filter_, open_table_reader(*file_, fields, cache_));
      OC_ASSIGN_OR_RETURN(
          bound_, format::bind(*all_of(std::move(batch_parts)), *filter_.batch_type, opts_.filter));
      std::erase_if(rest, [&](const std::string& n) {
        return std::find(fields.begin(), fields.end(), n) != fields.end();
      });
    }
    if (root_nulls) return std::vector<RowWindow>{{begin_, end_}};  // field stats ignore root nulls
    return prune_rows(full, *schema);
  }

  // The reader of top-level field @p name alone (the root's reader when the file is not a struct).
  Result<std::unique_ptr<LayoutReader>> open_field_reader(const std::string& name) {
    const auto& t = file_->dtype();
    const auto& layout = file_->footer().layout;
    if (t->kind != TypeKind::struct_ || layout->encoding != "vortex.struct")
      return file_->open_reader(cache_);
    const size_t i =
        static_cast<size_t>(std::find(t->names.begin(), t->names.end(), name) - t->names.begin());
    const size_t first = layout->children.size() - t->children.size();
    OC_EXPECT(i < t->children.size() && first + i < layout->children.size(), not_found,
              "no column '{}'", name);
    return make_layout_reader(layout->children[first + i], t->children[i], cache_, 1);
  }

  // File statistics, then zone maps (their tables are read only if the file survives).
  Result<std::vector<RowWindow>> prune_rows(const BoundExpr& e, const DType& schema) {
    const auto& names = schema.names;
    const auto& fstats = file_->footer().field_stats;
    auto field_index = [&](const std::string& n) {
      return static_cast<size_t>(std::find(names.begin(), names.end(), n) - names.begin());
    };
    std::vector<std::optional<ColumnZones>> zones;
    for (const auto& c : e.columns) {
      std::optional<ColumnZones> fz;
      if (c.path.size() == 1 && fstats.size() == names.size()) {
        OC_ASSIGN_OR_RETURN(fz,
                            file_zone(fstats[field_index(c.path[0])], c.type, file_->row_count()));
      }
      zones.push_back(std::move(fz));
    }
    OC_ASSIGN_OR_RETURN(PrunePlan whole, prune(e, zones, begin_, end_));
    if (whole.keep.empty() && begin_ < end_) {
      stats_.file_pruned = true;
      stats_.rows_pruned = end_ - begin_;
      return std::vector<RowWindow>{};
    }
    for (size_t i = 0; i < e.columns.size(); ++i) {
      zones[i].reset();
      if (e.columns[i].path.size() != 1) continue;
      OC_ASSIGN_OR_RETURN(auto reader, open_field_reader(e.columns[i].path[0]));
      OC_ASSIGN_OR_RETURN(zones[i], column_zones(*reader));
    }
    OC_ASSIGN_OR_RETURN(PrunePlan plan, prune(e, zones, begin_, end_));
    stats_.zones_total = plan.zones_total;
    stats_.zones_pruned = plan.zones_pruned;
    uint64_t kept = 0;
    for (const RowWindow& w : plan.keep) kept += w.size();
    stats_.rows_pruned = (end_ - begin_) - kept;
    return plan.keep;
  }

  std::vector<LayoutReader*> readers() {
    std::vector<LayoutReader*> out;
    for (auto& p : pushdowns_) out.push_back(p.reader.get());
    if (filter_.reader) out.push_back(filter_.reader.get());
    if (rest_.reader) out.push_back(rest_.reader.get());
    return out;
  }

  // Keeps the segments of splits [next_, @p to), and of at least scan_readahead_splits splits, in
  // the cache, and of as many after them on their way, each window in one coalesced batch: the
  // window the scan decodes from was fetched while it decoded the one before (the first window,
  // or one the scan caught up with, is fetched now). Only the first phase's columns are read
  // ahead (all columns without a filter); a filtered split's others wait for its survivors.
  Result<void> prefetch_ahead(size_t to) {
    const size_t window = std::max<size_t>(defaults().scan_readahead_splits, to - next_);
    if (requested_ < to) {
      const size_t upto = std::min(splits_.size(), std::max(to, next_ + window));
      std::vector<uint32_t> ids = first_phase_segments(std::max(next_, requested_), upto);
      StageTimer t(stats_.fetch_ns);
      OC_TRY(cache_.prefetch(ids));
      requested_ = upto;
    }
    while (opts_.read_ahead && requested_ < splits_.size() && requested_ < next_ + 2 * window) {
      const size_t upto = std::min(splits_.size(), requested_ + window);
      cache_.fetch_behind(first_phase_segments(requested_, upto));
      requested_ = upto;
    }
    return {};
  }

  // The segments the first phase reads for splits [@p from, @p to), sorted, each once.
  std::vector<uint32_t> first_phase_segments(size_t from, size_t to) {
    std::vector<LayoutReader*> first;
    for (auto& p : pushdowns_) first.push_back(p.reader.get());
    if (filter_.reader) first.push_back(filter_.reader.get());
    if (first.empty()) first.push_back(rest_.reader.get());
    std::vector<uint32_t> ids;
    for (size_t i = from; i < to; ++i) {
      for (LayoutReader* r : first) r->collect_segments(splits_[i].first, splits_[i].second, ids);
    }
    sort_unique(ids);
    return ids;
  }

  // Evaluates the filter on rows [b, e) into @p mask: pushdowns first, then, if a row is still
  // in, the batch conjuncts. @return the filter reader's batch (null without one or when no
  // row survived the pushdowns).
  Result<ColumnPtr> evaluate_split(uint64_t b, uint64_t e, Mask& mask) {
    mask.keep.assign(e - b, 1);
    mask.count = e - b;
    for (auto& p : pushdowns_) {
      OC_ASSIGN_OR_RETURN(auto truth, p.reader->evaluate(p.pred, b, e));
      OC_EXPECT(truth.size() == e - b, corrupt, "filter on '{}' gave {} rows for {}", p.field,
                truth.size(), e - b);
      const uint8_t* t = truth.data();
      and_into(mask, [t](uint64_t r) { return t[r] == static_cast<uint8_t>(Truth::true_); });
      if (mask.count == 0) return ColumnPtr();
    }
    if (!filter_.reader) return ColumnPtr();
    OC_ASSIGN_OR_RETURN(ColumnPtr col, filter_.reader->read(b, e));
    OC_ASSIGN_OR_RETURN(ColumnPtr batch, filter_.to_batch(std::move(col)));
    OC_ASSIGN_OR_RETURN(Mask m, evaluate(bound_, *batch));
    const uint8_t* kept = m.keep.data();
    and_into(mask, [kept](uint64_t r) { return kept[r] != 0; });
    return batch;
  }

  template <class Keep>
  static void and_into(Mask& mask, Keep&& keep) {
    // Raw pointers and a local count: through the vector, each byte stored would make the
    // compiler reload them.
    uint8_t* k = mask.keep.data();
    const uint64_t n = mask.keep.size();
    uint64_t count = 0;
    for (uint64_t r = 0; r < n; ++r) {
      k[r] = static_cast<uint8_t>(k[r] & static_cast<uint8_t>(keep(r)));
      count += k[r];
    }
    mask.count = count;
  }

  // Appends the row number field to the output type (ScanOptions::row_numbers), after the
  // filter is planned: it is no column of the file, so nothing reads it.
  Result<void> add_row_number_field() {
    OC_EXPECT(!opts_.chunk_decoder, unsupported,
              "row numbers come from a host scan, not from one decoded elsewhere");
    std::vector<std::string> names = dtype_->names;
    OC_EXPECT(std::find(names.begin(), names.end(), kRowNumberColumn) == names.end(), invalid,
              "the file has a column named {}: it cannot also carry row numbers under that name",
              kRowNumberColumn);
    std::vector<DTypePtr> fields = dtype_->children;
    names.emplace_back(kRowNumberColumn);
    fields.push_back(DType::make_primitive(PType::u64, false));
    dtype_ = DType::make_struct(std::move(names), std::move(fields), false);
    return {};
  }

  // The row numbers of a split of @p len rows from row @p first: all of them, or those @p mask
  // keeps.
  static ColumnPtr row_number_column(uint64_t first, uint64_t len, const Mask* mask) {
    std::vector<uint64_t> kept;
    if (mask) kept = kept_rows(*mask, first);
    const uint64_t n = mask ? kept.size() : len;
    Buffer values = Buffer::allocate_array_for_overwrite(n, sizeof(uint64_t));
    auto* v = reinterpret_cast<uint64_t*>(values.mutable_data());
    if (mask) {
      std::copy(kept.begin(), kept.end(), v);
    } else {
      std::iota(v, v + n, first);
    }
    auto col = std::make_shared<Column>();
    col->dtype = DType::make_primitive(PType::u64, false);
    col->length = n;
    col->buffers.push_back(std::move(values));
    return col;
  }

  // The output batch of the split of @p len rows from row @p first: each projected column from
  // whichever reader read it, filtered by the mask (@p rest_filtered: rest holds only the
  // surviving rows already), then the row numbers when asked for.
  Result<ColumnPtr> assemble(const ColumnPtr& filtered, const ColumnPtr& rest, bool rest_filtered,
                             const Mask& mask, uint64_t first, uint64_t len) {
    const bool all = !filtering() || mask.count == len;
    auto out = std::make_shared<Column>();
    out->dtype = dtype_;
    out->length = all ? len : mask.count;
    const size_t read_fields = dtype_->names.size() - (opts_.row_numbers ? 1 : 0);
    for (size_t f = 0; f < read_fields; ++f) {
      const std::string& name = dtype_->names[f];
      ColumnPtr col;
      bool done = all;
      for (const auto& [reader, batch, pre] :
           {std::tuple{&filter_, filtered, false}, std::tuple{&rest_, rest, rest_filtered}}) {
        if (!batch) continue;
        const auto& names = reader->batch_type->names;
        auto it = std::find(names.begin(), names.end(), name);
        if (it == names.end()) continue;
        col = batch->children[static_cast<size_t>(it - names.begin())];
        done = done || pre;
      }
      if (!done) {
        StageTimer t(stats_.decode_ns);
        OC_ASSIGN_OR_RETURN(col, filter_rows(col, mask));
      }
      if (opts_.chunk_decoder && from_filter(name)) {
        OC_ASSIGN_OR_RETURN(col, opts_.chunk_decoder->place(std::move(col), nullptr));
      }
      out->children.push_back(std::move(col));
    }
    if (opts_.row_numbers) {
      out->children.push_back(row_number_column(first, len, all ? nullptr : &mask));
    }
    return ColumnPtr(std::move(out));
  }

  std::shared_ptr<const VortexFile> file_;
  ScanOptions opts_;
  SegmentCache cache_;
  std::vector<Pushdown> pushdowns_;
  TableReader filter_;  // columns of the conjuncts evaluated on batches
  TableReader rest_;    // projected columns the filter's reader does not read
  BoundExpr bound_;     // those conjuncts, bound to filter_'s batches
  DTypePtr dtype_;
  uint64_t begin_ = 0, end_ = 0;
  std::vector<std::pair<uint64_t, uint64_t>> splits_;
  std::vector<size_t> split_group_;  // per split: its independent group (group_splits)
  std::deque<Result<std::optional<ColumnPtr>>> ready_;  // decoded splits not handed out yet
  size_t next_ = 0, requested_ = 0;  // the first split not decoded; not requested from storage
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
    OC_ASSIGN_OR_RETURN(out.reader,
                        make_projected_struct_reader(file.footer().layout, t, cols, cache));
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
