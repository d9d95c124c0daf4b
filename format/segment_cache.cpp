// SPDX-License-Identifier: Apache-2.0
// Segments fetched ahead of decoding (format/segment_cache.hpp).
#include "format/segment_cache.hpp"

#include <unistd.h>

#include <algorithm>
#include <thread>
#include <utility>

#include "config/defaults.hpp"
#include "format/scan_profile.hpp"

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
      return partial_min_bytes_ == 0 ? source_->read(ranges)
                                     : source_->read_coalesced(ranges, partial_coalescing());
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
      } catch (
          ...) {  // no memory for the map: take() reads what is not cached, nothing throws here
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
    return Buffer::copy_of(
        footer_.tail.span().subspan(r.offset - footer_.tail_range.offset, r.length));
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
  // A gap is merged where a read of its own would cost more. From a store that is a gap smaller
  // than a segment read whole; from the page cache, where a read is a copy and not a round trip,
  // a gap within a page: wider ones made a take of 100 rows of TPC-H lineitem (SF 1) read 35 MB
  // for the 5.5 MB it needed. Merged reads stay within the local-file limit.
  constexpr uint64_t kPage = 4096;
  CoalesceOptions opts = CoalesceOptions::local_file();
  opts.max_gap = source_->local() ? std::min(partial_min_bytes_, kPage) : partial_min_bytes_;
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
  if (source_->local()) return read_pending_in_place(ranges, owners);
  return read_pending_merged(ranges, owners);
}

Result<void> SegmentCache::read_pending_merged(std::span<const ByteRange> ranges,
                                               std::span<PartialSegment* const> owners) {
  // The store sends a merged read's gaps too, and they are bytes of the same segments: kept
  // with the bytes asked for, a later round finds them read (a list's elements near its
  // offsets, a string's bytes near its view) instead of asking the store for them again.
  const CoalesceOptions opts = partial_coalescing();
  const std::vector<CoalescedRead> plan = coalesce(ranges, opts);
  std::vector<ByteRange> reads;
  for (const CoalescedRead& m : plan) reads.push_back(m.range);
  ArenaScope heap(nullptr);  // fetched bytes: see fetch_claimed
  const uint64_t start = monotonic_ns();
  auto bufs = source_->read_coalesced(reads, opts);
  take_wait_ns_ += monotonic_ns() - start;
  OC_TRY(bufs);
  std::vector<PartialSegment*> filled;
  for (size_t k = 0; k < plan.size(); ++k) {
    // A merged read may span the segments of its members (and bytes of none): each of them gets
    // its own part of it, once. Segments are found through the members, never by searching
    // the file's ranges, which a hostile footer may make overlap.
    const ByteRange& r = plan[k].range;
    filled.clear();
    for (const size_t i : plan[k].members) {
      PartialSegment* p = owners[i];
      if (std::find(filled.begin(), filled.end(), p) != filled.end()) continue;
      filled.push_back(p);
      const uint64_t b = std::max(r.offset, p->range().offset);
      const uint64_t e = std::min(r.end(), p->range().end());
      p->fill(b, (*bufs)[k].span().subspan(b - r.offset, e - b));
    }
  }
  for (const ByteRange& r : ranges) bytes_fetched_ += r.length;
  return {};
}

Result<void> SegmentCache::read_pending_in_place(std::span<const ByteRange> ranges,
                                                 std::span<PartialSegment* const> owners) {
  // A local read is a copy out of the page cache, so it may as well land in the segment's own
  // pages: no buffer to allocate, fault in and copy out of, which was most of a cold take's
  // time after its reads. A merged read lands in one mapping, so each segment's ranges merge
  // among themselves only (ranges arrive grouped by segment). A gap merged in is the file's
  // bytes, read like the rest.
  const CoalesceOptions opts = partial_coalescing();
  std::vector<ByteRange> reads;
  std::vector<uint8_t*> dsts;
  std::vector<PartialSegment*> read_owners;
  for (size_t i = 0, j = 0; i < ranges.size(); i = j) {
    while (j < ranges.size() && owners[j] == owners[i]) ++j;
    for (const CoalescedRead& m : coalesce(ranges.subspan(i, j - i), opts)) {
      reads.push_back(m.range);
      dsts.push_back(owners[i]->destination(m.range.offset));
      read_owners.push_back(owners[i]);
    }
  }
  const uint64_t start = monotonic_ns();
  Result<void> read = source_->read_into(reads, dsts);
  take_wait_ns_ += monotonic_ns() - start;
  OC_TRY(read);
  for (size_t k = 0; k < reads.size(); ++k) {
    read_owners[k]->mark_read(reads[k].offset, reads[k].length);
  }
  // The bytes asked for, as a store's fetch counts them; the gaps merged in are the source's
  // own count (SourceStats::bytes_read).
  for (const ByteRange& r : ranges) bytes_fetched_ += r.length;
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

}  // namespace oc::format
