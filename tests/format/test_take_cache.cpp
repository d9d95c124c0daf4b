// SPDX-License-Identifier: Apache-2.0
// TakeCache: partial segments kept between takes of one open file, within a byte budget.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <vector>

#include "config/defaults.hpp"
#include "format/take_cache.hpp"

using namespace oc;
using format::PartialSegment;
using format::PartialSegments;
using format::TakeCache;

namespace {

const uint64_t kPage = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));

// A partial segment at file offset @p at with its first @p resident bytes read.
std::shared_ptr<PartialSegment> segment_with(uint64_t at, uint64_t resident) {
  auto seg = *PartialSegment::reserve({at, 1 << 20});
  seg->fill(at, std::vector<uint8_t>(resident, 7));
  return seg;
}

class CacheBudget {
 public:
  explicit CacheBudget(uint64_t bytes) : saved_(defaults()) {
    Defaults d = saved_;
    d.take_cache_bytes = bytes;
    set_defaults(d);
  }
  ~CacheBudget() { set_defaults(saved_); }

 private:
  const Defaults saved_;
};

}  // namespace

TEST_CASE("the take cache hands a file's segments to one take at a time", "[format][take]") {
  const CacheBudget budget(1 << 20);
  TakeCache& cache = TakeCache::process();
  const uint64_t file = TakeCache::new_file_id(), other = TakeCache::new_file_id();
  const uint64_t before = cache.bytes();
  cache.put_back(file, PartialSegments{{3, segment_with(0, 4000)}, {4, segment_with(0, 0)}});
  CHECK(cache.bytes() == before + kPage);  // whole pages; a segment with none is not kept
  CHECK(cache.check_out(other, std::vector<uint32_t>{3}).empty());
  PartialSegments got = cache.check_out(file, std::vector<uint32_t>{3, 4, 5});
  REQUIRE(got.size() == 1);
  CHECK(got.at(3)->bytes_resident() == 4000);
  CHECK(cache.check_out(file, std::vector<uint32_t>{3}).empty());  // it is that take's now
  CHECK(cache.bytes() == before);

  // Its pending ranges are dropped on the way back; of two takes' copies the fuller stays.
  (void)got.at(3)->need(5000, 100);
  got.at(3)->fill(3 * kPage, std::vector<uint8_t>(10, 1));  // a byte on a page of its own
  cache.put_back(file, std::move(got));
  CHECK(cache.bytes() == before + 2 * kPage);
  cache.put_back(file, PartialSegments{{3, segment_with(0, 1000)}});
  got = cache.check_out(file, std::vector<uint32_t>{3});
  REQUIRE(got.size() == 1);
  CHECK(got.at(3)->bytes_resident() == 4010);
  CHECK_FALSE(got.at(3)->has_pending());
  cache.put_back(file, std::move(got));
  cache.forget(file);
  CHECK(cache.bytes() == before);
}

TEST_CASE("the take cache keeps take_cache_bytes, the least recently used out first",
          "[format][take]") {
  TakeCache& cache = TakeCache::process();
  const uint64_t before = cache.bytes();
  const CacheBudget budget(before + 10 * kPage);
  const uint64_t a = TakeCache::new_file_id(), b = TakeCache::new_file_id();
  cache.put_back(a, PartialSegments{{0, segment_with(0, 4 * kPage)}});
  cache.put_back(b, PartialSegments{{0, segment_with(0, 4 * kPage)}});
  cache.put_back(a, PartialSegments{{1, segment_with(0, 4 * kPage)}});  // past the budget: a/0 goes
  CHECK(cache.bytes() == before + 8 * kPage);
  CHECK(cache.check_out(a, std::vector<uint32_t>{0}).empty());
  PartialSegments kept = cache.check_out(a, std::vector<uint32_t>{1});
  CHECK(kept.size() == 1);
  cache.put_back(a, std::move(kept));  // now the most recently used
  cache.put_back(a, PartialSegments{{2, segment_with(0, 20 * kPage)}});  // larger than the budget
  CHECK(cache.bytes() == before + 8 * kPage);
  cache.forget(a);
  CHECK(cache.bytes() == before + 4 * kPage);  // b's stays
  CHECK(cache.check_out(b, std::vector<uint32_t>{0}).size() == 1);
  CHECK(cache.bytes() == before);
}

TEST_CASE("a partial segment's memory is the pages its bytes touch", "[format][take]") {
  auto seg = *PartialSegment::reserve({kPage / 2, 16 * kPage});
  CHECK(seg->memory_resident() == 0);
  seg->fill(kPage / 2 + 10, std::vector<uint8_t>(64, 1));              // page 0
  seg->fill(kPage / 2 + 100, std::vector<uint8_t>(64, 1));             // page 0 again
  seg->fill(kPage / 2 + 5 * kPage - 10, std::vector<uint8_t>(20, 1));  // pages 4 and 5
  CHECK(seg->bytes_resident() == 148);
  CHECK(seg->memory_resident() == 3 * kPage);
}
