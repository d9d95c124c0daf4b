// SPDX-License-Identifier: Apache-2.0
#include "format/layout_reader.hpp"

#include <algorithm>
#include <iterator>
#include <numeric>
#include <optional>
#include <thread>
#include <utility>

#include <unistd.h>

#include "config/defaults.hpp"
#include "format/array_tree.hpp"
#include "format/decode.hpp"
#include "format/compressed_eval.hpp"
#include "format/expr_eval.hpp"
#include "format/parallel.hpp"
#include "format/proto/layouts.pb.h"
#include "format/scan_profile.hpp"
#include "format/string_views.hpp"

namespace oc::format {

SegmentCache::~SegmentCache() {
  if (!fetcher_) return;
  if (fetcher_pid_ != ::getpid()) {
    (void)fetcher_.release();  // the parent's thread, and the lock it may hold, are not ours
    return;
  }
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    jobs_.clear();
  }
  changed_.notify_all();
  fetcher_->join();
}

bool SegmentCache::in_tail(uint32_t id) const {
  const ByteRange r = footer_.segments[id].range();
  return r.offset >= footer_.tail_range.offset && r.end() <= footer_.tail_range.end();
}

std::vector<uint32_t> SegmentCache::claim(std::span<const uint32_t> ids) {
  std::vector<uint32_t> mine;
  std::lock_guard lock(mu_);
  for (uint32_t id : ids) {
    // take() serves segments inside the tail read at open time, without I/O.
    if (!in_tail(id) && !cached_.count(id) && on_the_way_.insert(id).second) mine.push_back(id);
  }
  return mine;
}

Result<void> SegmentCache::fetch_claimed(const std::vector<uint32_t>& ids) {
  std::vector<ByteRange> ranges;
  for (uint32_t id : ids) ranges.push_back(footer_.segments[id].range());
  Result<std::vector<Buffer>> bufs = [&]() -> Result<std::vector<Buffer>> {
    // Fetched bytes live on the heap, never in a decode arena: they are the file's bytes, and
    // what of them a batch keeps is copied once into its slab (the one copy of a batch).
    ArenaScope heap(nullptr);
    try {
      // A take reading segments in part reads the small ones whole without the gaps between them.
      return partial_min_bytes_ == 0 ? source_->read(ranges) : source_->read_coalesced(ranges, partial_coalescing());
    } catch (...) {  // a failed allocation: this fetch's error, on whichever thread it runs
      return current_exception_error("segment fetch");
    }
  }();
  {
    std::lock_guard lock(mu_);
    for (uint32_t id : ids) on_the_way_.erase(id);
    if (bufs.ok()) {
      // Counted before the segments are published: whoever takes one sees it counted.
      segments_fetched_ += ids.size();
      for (const auto& r : ranges) bytes_fetched_ += r.length;
      try {
        for (size_t i = 0; i < ids.size(); ++i) cached_.emplace(ids[i], std::move((*bufs)[i]));
      } catch (...) {  // no memory for the map: take() reads what is not cached, nothing throws here
      }
    }
  }
  changed_.notify_all();
  if (!bufs.ok()) return std::move(bufs).error();
  return {};
}

Result<void> SegmentCache::prefetch(std::span<const uint32_t> ids) {
  const std::vector<uint32_t> mine = claim(ids);
  if (mine.empty()) return {};
  return fetch_claimed(mine);
}

void SegmentCache::fetch_behind(std::vector<uint32_t> ids) {
  std::vector<uint32_t> mine = claim(ids);
  if (mine.empty()) return;
  std::unique_lock lock(mu_);
  if (!fetcher_) {
    try {
      fetcher_ = std::make_unique<std::thread>([this] { fetch_loop(); });
      fetcher_pid_ = ::getpid();
    } catch (...) {
      // No thread to fetch with: take() reads these segments when they are needed.
      for (uint32_t id : mine) on_the_way_.erase(id);
      return;
    }
  }
  jobs_.push_back(std::move(mine));
  lock.unlock();
  changed_.notify_all();
}

void SegmentCache::fetch_loop() {
  std::unique_lock lock(mu_);
  for (;;) {
    changed_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
    if (jobs_.empty()) return;  // stopping, nothing left that anyone waits for
    std::vector<uint32_t> job = std::move(jobs_.front());
    jobs_.pop_front();
    lock.unlock();
    (void)fetch_claimed(job);  // a failure drops the claim: take() reads again and reports it
    lock.lock();
  }
}

Result<Buffer> SegmentCache::take(uint32_t id) {
  const uint64_t start = monotonic_ns();
  {
    std::unique_lock lock(mu_);
    if (on_the_way_.count(id)) {
      changed_.wait(lock, [&] { return !on_the_way_.count(id); });
    }
    auto it = cached_.find(id);
    if (it != cached_.end()) {
      Buffer b = std::move(it->second);
      cached_.erase(it);
      take_wait_ns_ += monotonic_ns() - start;
      return b;
    }
  }
  const ByteRange r = footer_.segments[id].range();
  ArenaScope heap(nullptr);  // fetched bytes: see fetch_claimed
  // Segments inside the tail read at open time cost no further I/O.
  if (in_tail(id)) {
    return Buffer::copy_of(footer_.tail.span().subspan(r.offset - footer_.tail_range.offset, r.length));
  }
  ++segments_fetched_;
  bytes_fetched_ += r.length;
  auto bufs = source_->read(std::span(&r, 1));
  take_wait_ns_ += monotonic_ns() - start;
  OC_TRY(bufs);
  return (*bufs)[0];
}

bool SegmentCache::reads_in_part(uint32_t id) const {
  return partial_min_bytes_ != 0 && footer_.segments[id].range().length >= partial_min_bytes_ &&
         !in_tail(id);
}

CoalesceOptions SegmentCache::partial_coalescing() const {
  // A gap smaller than a segment that is read whole is not worth a read of its own either;
  // merged reads stay within the local-file limit, the smaller of the two.
  CoalesceOptions opts = CoalesceOptions::local_file();
  opts.max_gap = partial_min_bytes_;
  return opts;
}

Result<std::shared_ptr<PartialSegment>> SegmentCache::partial(uint32_t id) {
  std::lock_guard lock(mu_);
  auto it = partials_.find(id);
  if (it != partials_.end()) return it->second;
  OC_ASSIGN_OR_RETURN(auto p, PartialSegment::reserve(footer_.segments[id].range()));
  partials_.emplace(id, p);
  return p;
}

bool SegmentCache::has_pending() const {
  std::lock_guard lock(mu_);
  for (const auto& [id, p] : partials_) {
    if (p->has_pending()) return true;
  }
  return false;
}

Result<void> SegmentCache::fetch_pending() {
  std::vector<ByteRange> ranges;
  std::vector<PartialSegment*> owners;
  {
    std::lock_guard lock(mu_);
    for (const auto& [id, p] : partials_) {
      for (const ByteRange& r : p->take_pending()) {
        ranges.push_back(r);
        owners.push_back(p.get());
      }
    }
  }
  if (ranges.empty()) return {};
  ArenaScope heap(nullptr);  // fetched bytes: see fetch_claimed
  const uint64_t start = monotonic_ns();
  auto bufs = source_->read_coalesced(ranges, partial_coalescing());
  take_wait_ns_ += monotonic_ns() - start;
  OC_TRY(bufs);
  for (size_t i = 0; i < ranges.size(); ++i) {
    owners[i]->fill(ranges[i].offset, (*bufs)[i].span());
    bytes_fetched_ += ranges[i].length;
  }
  return {};
}

void SegmentCache::adopt_partials(PartialSegments segments) {
  std::lock_guard lock(mu_);
  partials_.merge(segments);
}

PartialSegments SegmentCache::release_partials() {
  std::lock_guard lock(mu_);
  return std::exchange(partials_, {});
}

void SegmentCache::need_partials_whole() {
  std::lock_guard lock(mu_);
  for (const auto& [id, p] : partials_) (void)p->need(0, p->range().length);
}

std::vector<uint64_t> common_independent_starts(std::span<const LayoutReader* const> readers) {
  if (readers.empty()) return {0};
  std::vector<uint64_t> common = readers[0]->independent_starts();
  for (const LayoutReader* r : readers.subspan(1)) {
    const std::vector<uint64_t> mine = r->independent_starts();
    std::vector<uint64_t> both;
    std::set_intersection(common.begin(), common.end(), mine.begin(), mine.end(), std::back_inserter(both));
    common = std::move(both);
  }
  return common;
}

Result<std::vector<uint8_t>> LayoutReader::evaluate(const BoundExpr& pred, uint64_t begin, uint64_t end) {
  OC_ASSIGN_OR_RETURN(ColumnPtr col, read(begin, end));
  Column batch;
  batch.dtype = DType::make_struct({"value"}, {dtype_}, false);
  batch.length = col->length;
  batch.children.push_back(std::move(col));
  OC_ASSIGN_OR_RETURN(auto truth, evaluate_truth(pred, batch));
  std::vector<uint8_t> out(truth.size());
  for (size_t i = 0; i < truth.size(); ++i) out[i] = static_cast<uint8_t>(truth[i]);
  return out;
}

Result<ColumnPtr> LayoutReader::read_to(ChunkDecoder& d, uint64_t begin, uint64_t end,
                                        const std::vector<uint8_t>* keep) {
  OC_ASSIGN_OR_RETURN(ColumnPtr col, read(begin, end));
  return d.place(std::move(col), keep);
}

Result<ColumnPtr> LayoutReader::take(std::span<const uint64_t> rows) {
  if (rows.empty()) return read(0, 0);
  OC_ASSIGN_OR_RETURN(ColumnPtr window, read(rows.front(), rows.back() + 1));
  std::vector<uint64_t> local(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) local[i] = rows[i] - rows.front();
  return format::take(window, local);
}

namespace {

// ---- vortex.flat ---------------------------------------------------------------------------------

class FlatReader final : public LayoutReader {
 public:
  FlatReader(LayoutPtr l, DTypePtr t, SegmentCache& c)
      : LayoutReader(std::move(l), std::move(t), c), wanted_{{0, row_count()}} {}

  void collect_splits(uint64_t base, std::vector<uint64_t>& out) const override { out.push_back(base); }
  std::vector<uint64_t> independent_starts() const override { return {0}; }
  void collect_segments(uint64_t, uint64_t, std::vector<uint32_t>& out) const override {
    if (!decoded_ && !tree_) out.push_back(layout_->segments[0]);
  }
  void plan_rows(std::span<const RowWindow> ranges) override { wanted_.assign(ranges.begin(), ranges.end()); }
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
    if (!col.ok()) return std::move(col.error()).with_context(fmt::format("segment {}", layout_->segments[0]));
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
  Result<std::vector<uint8_t>> evaluate(const BoundExpr& pred, uint64_t begin, uint64_t end) override {
    if (!covers(begin, end)) {
      OC_ASSIGN_OR_RETURN(const ArrayView* tree, parsed());
      DecodeContext ctx;
      auto truth = evaluate_compressed(pred, *tree, dtype_, row_count(), {begin, end}, ctx);
      if (!truth.ok()) {
        return std::move(truth.error()).with_context(fmt::format("segment {}", layout_->segments[0]));
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
    const auto not_yet = [id] { return OC_ERROR(Errc::io, "segment {}: bytes still to be read", id); };
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

// ---- vortex.chunked ------------------------------------------------------------------------------

class ChunkedReader final : public LayoutReader {
 public:
  ChunkedReader(LayoutPtr l, DTypePtr t, SegmentCache& c, std::vector<std::unique_ptr<LayoutReader>> kids)
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
    for (; released_ < chunks_.size() && starts_[released_ + 1] <= row; ++released_) chunks_[released_]->release();
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
      if (!r.ok()) status = std::move(r.error()).with_context(fmt::format("chunk {}", i));
      else parts.push_back(std::move(r).value());
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
  Result<std::vector<uint8_t>> evaluate(const BoundExpr& pred, uint64_t begin, uint64_t end) override {
    std::vector<uint8_t> out;
    out.reserve(end - begin);
    Result<void> status;
    for_each_overlap(begin, end, [&](size_t i, uint64_t b, uint64_t e) {
      if (!status.ok()) return;
      auto r = chunks_[i]->evaluate(pred, b, e);
      if (!r.ok()) status = std::move(r.error()).with_context(fmt::format("chunk {}", i));
      else out.insert(out.end(), r->begin(), r->end());
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
      const auto i = static_cast<size_t>(std::upper_bound(starts_.begin(), starts_.end(), rows[at]) -
                                         starts_.begin() - 1);
      local.clear();
      for (; at < rows.size() && rows[at] < starts_[i + 1]; ++at) local.push_back(rows[at] - starts_[i]);
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
    for (size_t i = 0; i < chunks_.size(); ++i) chunks_[i]->collect_zone_readers(base + starts_[i], out);
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

// ---- vortex.struct -------------------------------------------------------------------------------

// The struct validity read from a bool layout @p v: a row is valid where v is true (and not null).
Buffer valid_bits(const Column& v) {
  Buffer bits = make_bitmap(v.length, false);
  for (uint64_t i = 0; i < v.length; ++i) {
    if (v.is_valid(i) && bitmap_get(v.buffers[0].data(), v.offset + i)) bitmap_set(bits.mutable_data(), i, true);
  }
  return bits;
}

class StructReader final : public LayoutReader {
 public:
  StructReader(LayoutPtr l, DTypePtr t, SegmentCache& c, std::unique_ptr<LayoutReader> validity,
               std::vector<std::unique_ptr<LayoutReader>> fields)
      : LayoutReader(std::move(l), std::move(t), c), validity_(std::move(validity)), fields_(std::move(fields)) {}

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
    auto c = std::make_shared<Column>();
    c->dtype = dtype_;
    c->length = end - begin;
    // Fields decode independently (each has its own readers; the segment cache locks), so
    // they decode side by side.
    std::vector<ColumnPtr> got(fields_.size());
    OC_TRY(parallel_for(fields_.size(), end - begin, [&](size_t i) -> Result<void> {
      auto r = fields_[i]->read(begin, end);
      if (!r.ok()) return std::move(r.error()).with_context(fmt::format("field '{}'", dtype_->names[i]));
      got[i] = std::move(r).value();
      return {};
    }));
    c->children = std::move(got);
    if (validity_) {
      OC_ASSIGN_OR_RETURN(ColumnPtr v, validity_->read(begin, end));
      return with_validity(c, valid_bits(*v), dtype_);
    }
    return ColumnPtr(std::move(c));
  }
  Result<ColumnPtr> read_to(ChunkDecoder& d, uint64_t begin, uint64_t end,
                            const std::vector<uint8_t>* keep) override {
    if (validity_) return LayoutReader::read_to(d, begin, end, keep);  // nulls to push down, here
    auto c = std::make_shared<Column>();
    c->dtype = dtype_;
    c->length = keep == nullptr ? end - begin : static_cast<uint64_t>(std::count_if(keep->begin(), keep->end(),
                                                                                    [](uint8_t k) { return k != 0; }));
    std::vector<ColumnPtr> got(fields_.size());
    OC_TRY(parallel_for(fields_.size(), end - begin, [&](size_t i) -> Result<void> {
      auto r = fields_[i]->read_to(d, begin, end, keep);
      if (!r.ok()) return std::move(r.error()).with_context(fmt::format("field '{}'", dtype_->names[i]));
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
    std::optional<Error> failed;  // the first field that failed, once the others had their turn
    for (size_t i = 0; i < fields_.size(); ++i) {
      auto r = fields_[i]->take(rows);
      if (!r.ok()) {
        failed = std::move(r.error()).with_context(fmt::format("field '{}'", dtype_->names[i]));
        if (!cache_.has_pending()) return std::move(*failed);
        continue;
      }
      c->children.push_back(std::move(r).value());
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
  std::unique_ptr<LayoutReader> validity_;
  std::vector<std::unique_ptr<LayoutReader>> fields_;
};

// ---- vortex.dict ---------------------------------------------------------------------------------

class DictReader final : public LayoutReader {
 public:
  DictReader(LayoutPtr l, DTypePtr t, SegmentCache& c, std::unique_ptr<LayoutReader> values,
             std::unique_ptr<LayoutReader> codes)
      : LayoutReader(std::move(l), std::move(t), c), values_(std::move(values)), codes_(std::move(codes)) {}

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
    if (!out.ok()) return std::move(out.error()).with_context(fmt::format("rows [{}, {})", begin, end));
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
  Result<std::vector<uint8_t>> evaluate(const BoundExpr& pred, uint64_t begin, uint64_t end) override {
    OC_ASSIGN_OR_RETURN(std::shared_ptr<const Verdicts> verdicts, verdicts_for(pred));
    const std::vector<uint8_t>& value_truth = verdicts->per_value;
    OC_ASSIGN_OR_RETURN(ColumnPtr codes, codes_->read(begin, end));
    std::vector<uint8_t> out(codes->length, verdicts->on_null);
    for (uint64_t i = 0; i < codes->length; ++i) {
      if (!codes->is_valid(i)) continue;
      const uint64_t code = unsigned_at(*codes, i);
      OC_EXPECT(code < value_truth.size(), corrupt, "dict code {} at row {} is past the {} dictionary values",
                code, begin + i, value_truth.size());
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

// ---- vortex.zoned and vortex.stats ---------------------------------------------------------------

/// Zone statistics a column of type @p t can carry; nullptr when the aggregate does not apply.
DTypePtr zone_stat_dtype(std::string_view stat, const DType& t) {
  const DType& s = t.storage();
  const bool ordered = s.kind == TypeKind::boolean || s.kind == TypeKind::primitive ||
                       s.kind == TypeKind::decimal || s.kind == TypeKind::utf8 ||
                       s.kind == TypeKind::binary;
  if (stat == "max" || stat == "min" || stat == "vortex.max" || stat == "vortex.min") {
    return ordered ? t.with_nullable(true) : nullptr;
  }
  if (stat == "vortex.bounded_max" || stat == "vortex.bounded_min") {
    if (!ordered) return nullptr;
    return DType::make_struct({"value", "truncated"}, {t.with_nullable(true), DType::make_bool(false)}, true);
  }
  if (stat == "sum" || stat == "vortex.sum") {
    if (s.kind == TypeKind::boolean) return DType::make_primitive(PType::u64, true);
    if (s.kind == TypeKind::primitive) {
      if (ptype_is_float(s.ptype)) return DType::make_primitive(PType::f64, true);
      return DType::make_primitive(ptype_is_signed(s.ptype) ? PType::i64 : PType::u64, true);
    }
    if (s.kind == TypeKind::decimal) {
      auto d = std::make_shared<DType>(s);
      d->precision = static_cast<uint8_t>(std::min(76, s.precision + 10));
      d->nullable = true;
      return d;
    }
    return nullptr;
  }
  // Counts are read as nullable: writers encode them with nullable codes when a dictionary
  // compresses them, and a non-nullable read type would reject that.
  if (stat == "nan_count" || stat == "vortex.nan_count") {
    return (s.kind == TypeKind::primitive && ptype_is_float(s.ptype)) ? DType::make_primitive(PType::u64, true) : nullptr;
  }
  if (stat == "null_count" || stat == "vortex.null_count") return DType::make_primitive(PType::u64, true);
  if (stat == "is_constant" || stat == "is_sorted" || stat == "is_strict_sorted") return DType::make_bool(true);
  if (stat == "uncompressed_size_in_bytes") return DType::make_primitive(PType::u64, true);
  return nullptr;
}

class ZonedReader final : public LayoutReader {
 public:
  ZonedReader(LayoutPtr l, DTypePtr t, SegmentCache& c, std::unique_ptr<LayoutReader> data)
      : LayoutReader(std::move(l), std::move(t), c), data_(std::move(data)) {}

  void collect_splits(uint64_t base, std::vector<uint64_t>& out) const override { data_->collect_splits(base, out); }
  void collect_segments(uint64_t b, uint64_t e, std::vector<uint32_t>& out) const override {
    data_->collect_segments(b, e, out);
  }
  Result<ColumnPtr> read(uint64_t begin, uint64_t end) override { return data_->read(begin, end); }
  Result<ColumnPtr> read_to(ChunkDecoder& d, uint64_t begin, uint64_t end,
                            const std::vector<uint8_t>* keep) override {
    return data_->read_to(d, begin, end, keep);
  }
  Result<ColumnPtr> take(std::span<const uint64_t> rows) override { return data_->take(rows); }
  void release() override { data_->release(); }
  void plan_rows(std::span<const RowWindow> ranges) override { data_->plan_rows(ranges); }
  void prefer_strings(StringLayout strings) override { data_->prefer_strings(strings); }
  std::vector<uint64_t> independent_starts() const override { return data_->independent_starts(); }
  void release_before(uint64_t row) override { data_->release_before(row); }
  Result<std::vector<uint8_t>> evaluate(const BoundExpr& pred, uint64_t begin, uint64_t end) override {
    return data_->evaluate(pred, begin, end);
  }
  void collect_zone_readers(uint64_t base, std::vector<ZoneMapRef>& out) override {
    out.push_back({base, this});
    data_->collect_zone_readers(base, out);
  }

  Result<ZoneTable> zones() override {
    if (zones_.table) return zones_;
    OC_EXPECT(layout_->children.size() == 2, corrupt, "{} needs 2 children", layout_->encoding);
    const auto& m = layout_->metadata;
    std::vector<std::string> names;
    std::vector<DTypePtr> types;
    auto add = [&](const std::string& name) {
      if (auto t = zone_stat_dtype(name, *dtype_)) {
        names.push_back(name);
        types.push_back(t);
        return true;
      }
      return false;
    };
    if (layout_->encoding == "vortex.stats") {
      // u32 LE zone_len, then a bitset of present Stat ordinals (bit i = ordinal i).
      OC_EXPECT(m.size() >= 4, corrupt, "vortex.stats metadata of {} bytes", m.size());
      zones_.zone_len = load_le<uint32_t>(m.data());
      static constexpr const char* kStats[] = {"is_constant", "is_sorted", "is_strict_sorted", "max", "min",
                                               "sum", "null_count", "uncompressed_size_in_bytes", "nan_count"};
      for (size_t i = 0; i < std::size(kStats); ++i) {
        const size_t byte = 4 + i / 8;
        if (byte < m.size() && ((m[byte] >> (i % 8)) & 1)) {
          if (add(kStats[i]) && (i == 3 || i == 4)) {
            names.push_back(i == 3 ? "max_is_truncated" : "min_is_truncated");
            types.push_back(DType::make_bool(false));
          }
        }
      }
    } else {
      OC_EXPECT(!m.empty() && m[0] == 1, unsupported, "vortex.zoned metadata version {}", m.empty() ? -1 : m[0]);
      OC_ASSIGN_OR_RETURN(auto meta, parse_metadata<pb::ZonedLayoutMetadata>(
                                         std::span(m).subspan(1), "vortex.zoned"));
      zones_.zone_len = meta.zone_len();
      for (const auto& a : meta.aggregates()) add(a.id());
    }
    // Writers store a bounded (truncated) min or max either as the plain value or as
    // {value, truncated}; the file does not say which, so try each shape, plain first.
    std::vector<size_t> bounded;
    for (size_t i = 0; i < types.size(); ++i) {
      if (types[i]->kind == TypeKind::struct_ && names[i].find("bounded_") != std::string::npos) bounded.push_back(i);
    }
    Result<ColumnPtr> table = OC_ERROR(Errc::corrupt, "no zones table shape matched");
    for (size_t combo = 0; combo < (size_t{1} << bounded.size()); ++combo) {
      auto shaped = types;
      for (size_t b = 0; b < bounded.size(); ++b) {
        if (!((combo >> b) & 1)) shaped[bounded[b]] = types[bounded[b]]->children[0];
      }
      auto table_t = DType::make_struct(names, shaped, false);
      OC_ASSIGN_OR_RETURN(auto reader, make_layout_reader(layout_->children[1], table_t, cache_, 1));
      auto attempt = reader->read(0, reader->row_count());
      // Report an unsupported encoding over a shape mismatch: it is the real reason.
      if (attempt.ok() || combo == 0 || attempt.error().code() == Errc::unsupported) {
        table = std::move(attempt);
      }
      if (table.ok()) break;
    }
    OC_TRY(table);
    zones_.table = std::move(table).value();
    return zones_;
  }

 private:
  std::unique_ptr<LayoutReader> data_;
  ZoneTable zones_;
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

Result<std::unique_ptr<LayoutReader>> struct_reader(const LayoutPtr& l, const DTypePtr& t,
                                                    std::span<const size_t> which, SegmentCache& cache,
                                                    uint32_t depth, DTypePtr out_t) {
  OC_EXPECT(t->kind == TypeKind::struct_, corrupt, "vortex.struct layout for {}", t->to_string());
  const size_t nf = t->children.size();
  const size_t first = l->children.size() - nf;
  // A nullable struct carries its validity as child 0, always: vortex-data refuses one without
  // it (`nchildren == expected`), and 0.36.0 wrote such files while their statistics counted
  // nulls, so reading them as all-valid would be wrong data.
  const size_t expected = nf + (t->nullable ? 1 : 0);
  OC_EXPECT(l->children.size() == expected, corrupt,
            "struct layout has {} children, expected {} ({} fields{})", l->children.size(), expected,
            nf, t->nullable ? " and the validity of a nullable struct" : "");
  std::unique_ptr<LayoutReader> validity;
  if (first == 1) {
    OC_ASSIGN_OR_RETURN(validity, make_layout_reader(l->children[0], DType::make_bool(false), cache, depth + 1));
  }
  OC_ASSIGN_OR_RETURN(auto fields, open_fields(*l, *t, which, first, cache, depth));
  return std::unique_ptr<LayoutReader>(
      std::make_unique<StructReader>(l, std::move(out_t), cache, std::move(validity), std::move(fields)));
}

}  // namespace

Result<std::unique_ptr<LayoutReader>> make_layout_reader(const LayoutPtr& l, const DTypePtr& t,
                                                         SegmentCache& cache, uint32_t depth) {
  OC_EXPECT(depth < defaults().max_array_depth, corrupt, "layout nested deeper than {}", depth);
  const std::string& id = l->encoding;
  if (id == "vortex.flat") {
    OC_EXPECT(l->segments.size() == 1 && l->children.empty(), corrupt,
              "flat layout with {} segments and {} children", l->segments.size(), l->children.size());
    return std::unique_ptr<LayoutReader>(std::make_unique<FlatReader>(l, t, cache));
  }
  if (id == "vortex.chunked") {
    std::vector<std::unique_ptr<LayoutReader>> kids;
    uint64_t rows = 0;
    for (const auto& c : l->children) {
      OC_ASSIGN_OR_RETURN(auto k, make_layout_reader(c, t, cache, depth + 1));
      rows += k->row_count();
      kids.push_back(std::move(k));
    }
    OC_EXPECT(rows == l->row_count, corrupt, "chunked layout of {} rows has chunks totalling {}",
              l->row_count, rows);
    return std::unique_ptr<LayoutReader>(std::make_unique<ChunkedReader>(l, t, cache, std::move(kids)));
  }
  if (id == "vortex.struct") {
    OC_EXPECT(t->kind == TypeKind::struct_, corrupt, "vortex.struct layout for {}", t->to_string());
    std::vector<size_t> all(t->children.size());
    for (size_t i = 0; i < all.size(); ++i) all[i] = i;
    return struct_reader(l, t, all, cache, depth, t);
  }
  if (id == "vortex.dict") {
    OC_EXPECT(l->children.size() == 2, corrupt, "dict layout with {} children", l->children.size());
    OC_ASSIGN_OR_RETURN(auto meta, parse_metadata<pb::DictLayoutMetadata>(l->metadata, "vortex.dict layout"));
    OC_ASSIGN_OR_RETURN(PType codes_p, ptype_from(meta.codes_ptype()));
    OC_EXPECT(!ptype_is_float(codes_p) && !ptype_is_signed(codes_p), corrupt, "dict codes of type {}",
              ptype_name(codes_p));
    const bool nullable_codes = meta.has_is_nullable_codes() ? meta.is_nullable_codes() : t->nullable;
    OC_EXPECT(l->children[1]->row_count == l->row_count, corrupt, "dict codes have {} rows, layout {}",
              l->children[1]->row_count, l->row_count);
    OC_ASSIGN_OR_RETURN(auto values, make_layout_reader(l->children[0], t, cache, depth + 1));
    OC_ASSIGN_OR_RETURN(auto codes, make_layout_reader(l->children[1], DType::make_primitive(codes_p, nullable_codes),
                                                       cache, depth + 1));
    return std::unique_ptr<LayoutReader>(std::make_unique<DictReader>(l, t, cache, std::move(values), std::move(codes)));
  }
  if (id == "vortex.zoned" || id == "vortex.stats") {
    OC_EXPECT(l->children.size() == 2, corrupt, "{} layout with {} children", id, l->children.size());
    OC_EXPECT(l->children[0]->row_count == l->row_count, corrupt, "{} data has {} rows, layout {}", id,
              l->children[0]->row_count, l->row_count);
    OC_ASSIGN_OR_RETURN(auto data, make_layout_reader(l->children[0], t, cache, depth + 1));
    return std::unique_ptr<LayoutReader>(std::make_unique<ZonedReader>(l, t, cache, std::move(data)));
  }
  return OC_ERROR(Errc::unsupported, "unsupported layout {}", id);
}

Result<std::unique_ptr<LayoutReader>> make_projected_struct_reader(const LayoutPtr& l, const DTypePtr& t,
                                                                   std::span<const std::string> fields,
                                                                   SegmentCache& cache) {
  OC_EXPECT(t->kind == TypeKind::struct_ && l->encoding == "vortex.struct", invalid,
            "column projection needs a struct file, this one is {}", t->to_string());
  std::vector<size_t> which;
  std::vector<std::string> names;
  std::vector<DTypePtr> types;
  for (const auto& name : fields) {
    auto it = std::find(t->names.begin(), t->names.end(), name);
    OC_EXPECT(it != t->names.end(), not_found, "no column '{}' in {}", name, t->to_string());
    const size_t i = static_cast<size_t>(it - t->names.begin());
    which.push_back(i);
    names.push_back(name);
    types.push_back(t->children[i]);
  }
  auto out_t = DType::make_struct(std::move(names), std::move(types), t->nullable);
  return struct_reader(l, t, which, cache, 0, std::move(out_t));
}

}  // namespace oc::format
