// SPDX-License-Identifier: Apache-2.0
// The slab range allocator: alignment, first fit, reuse after free, merging of free neighbours,
// and a seeded random run checked against a bitmap of the slab's 64-byte units.
#include <catch2/catch.hpp>
#include <random>
#include <vector>

#include "daemon/ranges.hpp"

using oc::daemon::kRangeAlign;
using oc::daemon::RangeAllocator;

TEST_CASE("ranges: aligned first fit, and a freed range is reused", "[daemon][ranges]") {
  RangeAllocator r(1000);
  CHECK(r.capacity() == 960);  // rounded down to the alignment
  auto a = r.allocate(1);
  auto b = r.allocate(65);
  auto c = r.allocate(0);
  REQUIRE((a && b && c));
  CHECK(*a == 0);
  CHECK(*b == 64);
  CHECK(*c == 192);  // b took two units
  CHECK(r.used() == 256);
  CHECK(r.free(*b));
  CHECK_FALSE(r.free(*b));  // not allocated any more
  CHECK_FALSE(r.free(7));   // never allocated
  auto d = r.allocate(64);  // first fit: the hole b left, not the tail
  REQUIRE(d);
  CHECK(*d == 64);
  CHECK(r.used() == 192);
}

TEST_CASE("ranges: a full slab refuses, and freeing merges holes", "[daemon][ranges]") {
  RangeAllocator r(4 * kRangeAlign);
  std::vector<uint64_t> at;
  for (int i = 0; i < 4; ++i) at.push_back(*r.allocate(kRangeAlign));
  CHECK_FALSE(r.allocate(1));
  CHECK_FALSE(r.allocate(5 * kRangeAlign));
  CHECK_FALSE(r.allocate(UINT64_MAX));
  // Free 1 and 2 (in either order they must merge into one 128-byte hole), then 0 and 3.
  r.free(at[2]);
  r.free(at[1]);
  auto two = r.allocate(2 * kRangeAlign);
  REQUIRE(two);
  CHECK(*two == kRangeAlign);
  r.free(*two);
  r.free(at[3]);
  r.free(at[0]);
  CHECK(r.empty());
  auto all = r.allocate(4 * kRangeAlign);  // only possible if every hole merged
  REQUIRE(all);
  CHECK(*all == 0);
}

TEST_CASE("ranges: random allocations never overlap and match a bitmap", "[daemon][ranges]") {
  const uint64_t units = 512;
  RangeAllocator r(units * kRangeAlign);
  std::vector<int> owner(units, -1);                // unit -> allocation index
  std::vector<std::pair<uint64_t, uint64_t>> live;  // offset, units
  std::mt19937_64 rng(GENERATE(1, 2, 3));
  for (int step = 0; step < 5000; ++step) {
    if (live.empty() || rng() % 3 != 0) {
      const uint64_t bytes = rng() % (40 * kRangeAlign);
      const uint64_t need = bytes == 0 ? 1 : (bytes + kRangeAlign - 1) / kRangeAlign;
      // The reference: the lowest run of `need` free units.
      std::optional<uint64_t> want;
      for (uint64_t u = 0, run = 0; u < units; ++u) {
        run = owner[u] < 0 ? run + 1 : 0;
        if (run == need) {
          want = (u + 1 - need) * kRangeAlign;
          break;
        }
      }
      auto got = r.allocate(bytes);
      REQUIRE(got == want);
      if (!got) continue;
      REQUIRE(*got % kRangeAlign == 0);
      for (uint64_t u = *got / kRangeAlign; u < *got / kRangeAlign + need; ++u) {
        owner[u] = static_cast<int>(live.size());
      }
      live.emplace_back(*got, need);
    } else {
      const size_t i = rng() % live.size();
      REQUIRE(r.free(live[i].first));
      for (uint64_t u = live[i].first / kRangeAlign;
           u < live[i].first / kRangeAlign + live[i].second; ++u) {
        owner[u] = -1;
      }
      live.erase(live.begin() + static_cast<std::ptrdiff_t>(i));
      for (size_t j = 0; j < live.size(); ++j) {  // indices moved down
        for (uint64_t u = live[j].first / kRangeAlign;
             u < live[j].first / kRangeAlign + live[j].second; ++u) {
          owner[u] = static_cast<int>(j);
        }
      }
    }
    uint64_t used = 0;
    for (const auto& [at, n] : live) used += n * kRangeAlign;
    REQUIRE(r.used() == used);
  }
}
