// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief The segments of one scan's reads: fetched ahead of decoding, as coalesced batches, on a
/// thread of the cache while the scan decodes, and handed to the layout readers (or, for a take,
/// read in part: format/partial_segment.hpp).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <span>
#include <thread>
#include <vector>

#include "config/error.hpp"
#include "format/buffer.hpp"
#include "format/footer.hpp"
#include "format/partial_segment.hpp"
#include "format/segment_source.hpp"
#include "format/take_cache.hpp"

namespace oc::format {

/// Segments fetched ahead of decoding, shared by the readers of one scan.
class SegmentCache {
 public:
  SegmentCache(std::shared_ptr<SegmentSource> source, const Footer& footer)
      : source_(std::move(source)), footer_(footer) {}
  /// Waits for a fetch still on its way (fetch_behind), so that nothing outlives the cache. In
  /// a forked child (the fetch thread stayed in the parent) it only lets go of it: a cache, like
  /// the scan that owns it, is used in the process that made it.
  ~SegmentCache();
  SegmentCache(const SegmentCache&) = delete;
  SegmentCache& operator=(const SegmentCache&) = delete;

  /// Fetches every listed segment neither cached nor on its way, as one coalesced batch, now.
  [[nodiscard]] Result<void> prefetch(std::span<const uint32_t> ids);
  /// Starts fetching @p ids (those neither cached nor on their way) on the cache's fetch thread
  /// and returns at once, so that the caller decodes while they are read; take() of one of them
  /// waits for it. Fetches run one after another in the order asked; one that fails is dropped,
  /// and take() then reads its segments itself and reports the error.
  void fetch_behind(std::vector<uint32_t> ids);
  /// @return segment @p id, reading it now if it was neither prefetched nor on its way (then it
  /// waits); the cache drops it.
  [[nodiscard]] Result<Buffer> take(uint32_t id);
  [[nodiscard]] const Footer& footer() const { return footer_; }
  [[nodiscard]] SegmentSource& source() { return *source_; }
  /// Segments and bytes read from the source so far (those served from the footer's tail read
  /// cost nothing and are not counted; of a take's partial segments, the bytes it asked for,
  /// not the gaps merged into its reads).
  [[nodiscard]] uint64_t segments_fetched() const { return segments_fetched_; }
  [[nodiscard]] uint64_t bytes_fetched() const { return bytes_fetched_; }
  /// Nanoseconds take() spent waiting for a segment on its way or reading one on demand.
  [[nodiscard]] uint64_t take_wait_ns() const { return take_wait_ns_; }

  // ---- takes that read segments in part (format/partial_segment.hpp), for VortexFile::take ----

  /// Makes the readers' take() read segments of at least @p min_bytes in part, in rounds that
  /// the caller drives with has_pending() and fetch_pending(); 0 (the default) reads them whole.
  void read_takes_in_part(uint64_t min_bytes) noexcept { partial_min_bytes_ = min_bytes; }
  /// Whether a take reads segment @p id in part (never one inside the footer's tail read).
  [[nodiscard]] bool reads_in_part(uint32_t id) const;
  /// Whether this is a take's cache that reads segments in part at all.
  [[nodiscard]] bool reads_takes_in_part() const noexcept { return partial_min_bytes_ != 0; }
  /// Segment @p id reserved for reading in part, the same object on every call.
  [[nodiscard]] Result<std::shared_ptr<PartialSegment>> partial(uint32_t id);
  /// Whether a take of this round needed bytes that no partial segment holds yet.
  [[nodiscard]] bool has_pending() const;
  /// Reads every pending range of every partial segment as one batch.
  [[nodiscard]] Result<void> fetch_pending();
  /// Marks all of every partial segment as needed: the last round of a take that needed more
  /// rounds than a file may ask for.
  void need_partials_whole();
  /// Starts the take from partial segments an earlier take read (format/take_cache.hpp); they
  /// are this cache's from now on.
  void adopt_partials(PartialSegments segments);
  /// Hands the take's partial segments over (for the take cache); the cache holds none after.
  [[nodiscard]] PartialSegments release_partials();

 private:
  void fetch_loop();
  // Whether segment @p id lies inside the footer's tail read (its bytes are in memory already).
  bool in_tail(uint32_t id) const;
  // Marks the listed segments neither cached nor on their way as on their way; @return them.
  std::vector<uint32_t> claim(std::span<const uint32_t> ids);
  // How reads of a take that reads segments in part are merged.
  CoalesceOptions partial_coalescing() const;
  // fetch_pending from a local source: reads @p ranges (owners[i]'s, grouped by owner) straight
  // into their partial segments.
  Result<void> read_pending_in_place(std::span<const ByteRange> ranges,
                                     std::span<PartialSegment* const> owners);
  // fetch_pending from a store: reads @p ranges (owners[i]'s) as merged reads and keeps all of
  // each, the gaps merged in included, in the partial segments of the ranges it carries.
  Result<void> read_pending_merged(std::span<const ByteRange> ranges,
                                   std::span<PartialSegment* const> owners);
  // Reads @p ids (claimed) into the cache, or drops their claim on failure.
  Result<void> fetch_claimed(const std::vector<uint32_t>& ids);

  std::shared_ptr<SegmentSource> source_;
  const Footer& footer_;
  mutable std::mutex mu_;
  std::condition_variable changed_;  // a fetch ended, or a job or stop arrived
  std::map<uint32_t, Buffer> cached_;
  std::set<uint32_t> on_the_way_;
  std::deque<std::vector<uint32_t>> jobs_;  // claimed, for the fetch thread
  bool stopping_ = false;
  std::unique_ptr<std::thread> fetcher_;  // started by the first fetch_behind
  pid_t fetcher_pid_ = 0;                 // the process it runs in
  std::atomic<uint64_t> segments_fetched_{0}, bytes_fetched_{0}, take_wait_ns_{0};
  uint64_t partial_min_bytes_ = 0;
  PartialSegments partials_;  // under mu_
};

}  // namespace oc::format
