// SPDX-License-Identifier: Apache-2.0
// SegmentCache's fetches behind the decode: a scan decodes one window of splits while the next
// is read on the cache's fetch thread. A source that holds its reads until released, or fails
// them, stands in for slow and broken storage (fault injection).
#include <catch2/catch.hpp>
#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>

#include "format/layout_reader.hpp"
#include "format/reader.hpp"
#include "tests/format/seed_files.hpp"

using namespace oc;
using format::Buffer;
using format::ByteRange;

namespace {

// A file's bytes behind a gate: reads wait until open() and fail while `failing`.
class GatedSource final : public format::SegmentSource {
 public:
  explicit GatedSource(std::vector<uint8_t> bytes) : bytes_(std::move(bytes)) {}
  uint64_t size() const override { return bytes_.size(); }
  const std::string& name() const override { return name_; }
  format::SourceStats stats() const override { return {}; }
  Result<std::vector<Buffer>> read(std::span<const ByteRange> ranges) override {
    std::unique_lock lock(mu_);
    ++reads_;
    changed_.notify_all();
    changed_.wait(lock, [&] { return open_; });
    if (failing_) return OC_ERROR(Errc::io, "the test's storage failed");
    std::vector<Buffer> out;
    for (const auto& r : ranges)
      out.push_back(Buffer::copy_of({bytes_.data() + r.offset, r.length}));
    return out;
  }
  void open(bool fail = false) {
    std::lock_guard lock(mu_);
    open_ = true;
    failing_ = fail;
    changed_.notify_all();
  }
  void close() {
    std::lock_guard lock(mu_);
    open_ = false;
  }
  // Waits until @p n reads have started.
  void await_reads(int n) {
    std::unique_lock lock(mu_);
    changed_.wait(lock, [&] { return reads_ >= n; });
  }
  int reads() {
    std::lock_guard lock(mu_);
    return reads_;
  }

 private:
  std::vector<uint8_t> bytes_;
  std::string name_ = "gated";
  std::mutex mu_;
  std::condition_variable changed_;
  bool open_ = true, failing_ = false;
  int reads_ = 0;
};

struct Fixture {
  std::vector<uint8_t> bytes = test::read_seed("zoned.vortex");
  std::shared_ptr<const format::VortexFile> file =
      *format::VortexFile::open(format::memory_source(Buffer::copy_of(bytes)));
  std::shared_ptr<GatedSource> source = std::make_shared<GatedSource>(bytes);

  // Segments outside the tail read at open time (take() serves those without I/O).
  std::vector<uint32_t> stored() const {
    std::vector<uint32_t> out;
    const auto& f = file->footer();
    for (uint32_t id = 0; id < f.segments.size(); ++id) {
      const ByteRange r = f.segments[id].range();
      if (r.end() <= f.tail_range.offset) out.push_back(id);
    }
    return out;
  }
  bool holds(const Buffer& b, uint32_t id) const {
    const ByteRange r = file->footer().segments[id].range();
    return b.size() == r.length &&
           std::equal(b.data(), b.data() + b.size(), bytes.begin() + r.offset);
  }
};

}  // namespace

TEST_CASE("segments fetched behind are read on the cache's thread while the caller goes on",
          "[format][io]") {
  Fixture fx;
  const auto ids = fx.stored();
  REQUIRE(ids.size() >= 2);
  const uint32_t a = ids[0], b = ids[1];
  format::SegmentCache cache(fx.source, fx.file->footer());
  fx.source->close();
  cache.fetch_behind({a, b});  // returns although the read it starts cannot finish yet
  fx.source->await_reads(1);
  auto taken = std::async(std::launch::async, [&] { return cache.take(b); });
  CHECK(taken.wait_for(std::chrono::milliseconds(50)) ==
        std::future_status::timeout);  // it waits for it
  fx.source->open();
  auto second = taken.get();
  REQUIRE(second.ok());
  CHECK(fx.holds(*second, b));
  auto first = cache.take(a);
  REQUIRE(first.ok());
  CHECK(fx.holds(*first, a));
  CHECK(fx.source->reads() == 1);  // one coalesced read served both
  CHECK(cache.segments_fetched() == 2);
}

TEST_CASE("a fetch behind that fails leaves the segment to take(), which reads it or reports why",
          "[format][io]") {
  Fixture fx;
  const auto ids = fx.stored();
  REQUIRE(!ids.empty());
  const uint32_t a = ids[0];
  format::SegmentCache cache(fx.source, fx.file->footer());
  fx.source->close();
  cache.fetch_behind({a});
  fx.source->await_reads(1);
  fx.source->open(/*fail=*/true);
  auto failed = cache.take(a);  // the fetch behind failed; take's own read fails the same way
  REQUIRE_FALSE(failed.ok());
  CHECK(failed.error().code() == Errc::io);
  CHECK(fx.source->reads() == 2);
  fx.source->open();
  cache.fetch_behind({a});
  auto again = cache.take(a);  // from the new fetch, or read again: never hung on one long gone
  REQUIRE(again.ok());
  CHECK(fx.holds(*again, a));
}

TEST_CASE("a cache ends with fetches queued behind it", "[format][io]") {
  Fixture fx;
  const auto ids = fx.stored();
  REQUIRE(ids.size() >= 2);
  auto cache = std::make_unique<format::SegmentCache>(fx.source, fx.file->footer());
  fx.source->close();
  cache->fetch_behind({ids[0]});
  cache->fetch_behind({ids[1]});  // queued behind the first, which cannot finish yet
  fx.source->await_reads(1);
  auto ended = std::async(std::launch::async, [&] { cache.reset(); });
  fx.source->open();
  CHECK(ended.wait_for(std::chrono::seconds(30)) == std::future_status::ready);
  CHECK(fx.source->reads() <= 2);  // the queued fetch ran before the end, or was dropped
}

namespace {

// A file's bytes that say whether they are local and record how each batch was to be merged.
class MergeRecordingSource final : public format::SegmentSource {
 public:
  MergeRecordingSource(std::vector<uint8_t> bytes, bool local)
      : bytes_(std::move(bytes)), local_(local) {}
  uint64_t size() const override { return bytes_.size(); }
  const std::string& name() const override { return name_; }
  format::SourceStats stats() const override { return {}; }
  bool local() const override { return local_; }
  Result<std::vector<Buffer>> read(std::span<const ByteRange> ranges) override {
    std::vector<Buffer> out;
    for (const auto& r : ranges)
      out.push_back(Buffer::copy_of({bytes_.data() + r.offset, r.length}));
    return out;
  }
  Result<std::vector<Buffer>> read_coalesced(std::span<const ByteRange> ranges,
                                             const format::CoalesceOptions& opts) override {
    gaps.push_back(opts.max_gap);
    coalesced.insert(coalesced.end(), ranges.begin(), ranges.end());
    return read(ranges);
  }
  std::vector<uint64_t> gaps;        // max_gap of every read_coalesced, in order
  std::vector<ByteRange> coalesced;  // every range read_coalesced read, in order
  std::vector<ByteRange> in_place;   // every range read_into read, in order

 protected:
  Result<void> read_each_into(std::span<const ByteRange> ranges,
                              std::span<uint8_t* const> dsts) override {
    in_place.insert(in_place.end(), ranges.begin(), ranges.end());
    return SegmentSource::read_each_into(ranges, dsts);
  }

 private:
  std::vector<uint8_t> bytes_;
  bool local_;
  std::string name_ = "recording";
};

}  // namespace

TEST_CASE(
    "a take reading in part reads a local file into place, merging gaps within a page, and a "
    "store through buffers, merging gaps within a segment; either way a merged gap stays read",
    "[format][io][take]") {
  Fixture fx;
  const auto ids = fx.stored();
  REQUIRE(!ids.empty());
  const uint32_t id = ids[0];
  const uint64_t length = fx.file->footer().segments[id].range().length;
  REQUIRE(length >= 2);
  constexpr uint64_t kInPart = 64 << 10;
  for (const bool local : {true, false}) {
    INFO((local ? "local" : "remote") << " source");
    auto source = std::make_shared<MergeRecordingSource>(fx.bytes, local);
    format::SegmentCache cache(source, fx.file->footer());
    cache.read_takes_in_part(kInPart);
    auto part = cache.partial(id);
    REQUIRE(part.ok());
    CHECK_FALSE((*part)->need(0, 1));
    CHECK_FALSE((*part)->need(length - 1, 1));
    REQUIRE(cache.fetch_pending().ok());
    // Both ranges arrived, whatever the merging.
    CHECK((*part)->need(0, 1));
    CHECK((*part)->need(length - 1, 1));
    const uint64_t first = fx.file->footer().segments[id].range().offset;
    CHECK((*part)->data()[0] == fx.bytes[first]);
    CHECK((*part)->data()[length - 1] == fx.bytes[first + length - 1]);
    // The bytes asked for, either way: a merged gap is the source's count, not the cache's.
    const uint64_t asked = std::min<uint64_t>(64, length) + (length - (length - 1) / 64 * 64);
    CHECK(cache.bytes_fetched() == (asked > length ? length : asked));
    // Needs grow to 64 bytes: [0, 64) and the last 64-byte block, one read if the gap between
    // them is within a page (local) or a segment read in part (a store).
    const uint64_t last = (length - 1) / 64 * 64;
    const bool merged = last <= 64 + (local ? 4096 : kInPart);
    const auto& reads = local ? source->in_place : source->coalesced;
    REQUIRE(reads.size() == (merged ? 1 : 2));
    CHECK(reads.front().offset == first);
    CHECK(reads.back().end() == first + length);
    // What was read is resident, a merged gap included, and holds the file's bytes.
    CHECK((*part)->bytes_resident() ==
          (merged ? length : std::min<uint64_t>(64, length) + (length - last)));
    if (merged) {
      CHECK(std::equal((*part)->data(), (*part)->data() + length, fx.bytes.begin() + first));
    }
    if (local) {
      CHECK(source->gaps.empty());
    } else {
      CHECK(source->in_place.empty());
      CHECK(source->gaps == std::vector<uint64_t>{kInPart});
    }
  }
  // Local files say so; memory is local too.
  CHECK(fx.file->source().local());
  auto file = format::VortexFile::open_path(test::seed_path("zoned.vortex"));
  REQUIRE(file.ok());
  CHECK((*file)->source().local());
}

TEST_CASE("a store's merged read that spans two segments read in part fills each with its part",
          "[format][io][take]") {
  Fixture fx;
  const auto ids = fx.stored();
  REQUIRE(ids.size() >= 2);
  const auto& segments = fx.file->footer().segments;
  // Two segments in file order, the first byte of each needed: one merged read covers both.
  const uint32_t a = ids[0], b = ids[1];
  const ByteRange ra = segments[a].range(), rb = segments[b].range();
  REQUIRE(ra.end() <= rb.offset);
  REQUIRE(rb.offset - ra.offset <= (64 << 10));
  auto source = std::make_shared<MergeRecordingSource>(fx.bytes, false);
  format::SegmentCache cache(source, fx.file->footer());
  cache.read_takes_in_part(64 << 10);
  auto pa = cache.partial(a), pb = cache.partial(b);
  REQUIRE((pa.ok() && pb.ok()));
  CHECK_FALSE((*pa)->need(0, 1));
  CHECK_FALSE((*pb)->need(0, 1));
  REQUIRE(cache.fetch_pending().ok());
  REQUIRE(source->coalesced.size() == 1);
  CHECK(source->coalesced[0].offset == ra.offset);
  // a holds all of itself that the read covered, b its first bytes; neither anything else.
  CHECK((*pa)->bytes_resident() == ra.length);
  CHECK(std::equal((*pa)->data(), (*pa)->data() + ra.length, fx.bytes.begin() + ra.offset));
  const uint64_t in_b = source->coalesced[0].end() - rb.offset;
  CHECK((*pb)->bytes_resident() == in_b);
  CHECK(std::equal((*pb)->data(), (*pb)->data() + in_b, fx.bytes.begin() + rb.offset));
  CHECK((*pa)->need(ra.length - 1, 1));
  CHECK(cache.bytes_fetched() ==
        std::min<uint64_t>(64, ra.length) + std::min<uint64_t>(64, rb.length));
}
