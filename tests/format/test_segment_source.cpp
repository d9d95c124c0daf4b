// SPDX-License-Identifier: Apache-2.0
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <thread>
#include <vector>

#include "format/segment_source.hpp"
#include "tests/format/seed_files.hpp"

using namespace oc;
using format::ByteRange;

TEST_CASE("coalesce merges close ranges up to the size cap", "[format][io]") {
  std::vector<ByteRange> r{{0, 10}, {15, 10}, {100, 10}, {5, 3}, {1000, 50}};
  auto plan = format::coalesce(r, {.max_gap = 10, .max_read = 200});
  REQUIRE(plan.size() == 3);
  CHECK(plan[0].range.offset == 0);
  CHECK(plan[0].range.length == 25);
  CHECK(plan[0].members.size() == 3);  // {0,10}, {5,3} contained, {15,10} within the gap
  CHECK(plan[1].range.offset == 100);
  CHECK(plan[2].range.offset == 1000);

  auto capped = format::coalesce(r, {.max_gap = 1000, .max_read = 30});
  for (const auto& m : capped) CHECK((m.range.length <= 30 || m.members.size() == 1));
  auto one = format::coalesce(r, {.max_gap = 1'000'000, .max_read = 1'000'000});
  CHECK(one.size() == 1);
}

TEST_CASE("local files serve batched ranges through one coalesced read", "[format][io]") {
  const auto bytes = test::read_seed("mixed.vortex");
  auto src = format::open_local_file(test::seed_path("mixed.vortex"));
  REQUIRE(src.ok());
  CHECK((*src)->size() == bytes.size());
  std::vector<ByteRange> ranges{{4, 100}, {200, 50}, {bytes.size() - 8, 8}};
  auto got = (*src)->read(ranges);
  REQUIRE(got.ok());
  for (size_t i = 0; i < ranges.size(); ++i) {
    REQUIRE((*got)[i].size() == ranges[i].length);
    CHECK(std::equal((*got)[i].data(), (*got)[i].data() + ranges[i].length,
                     bytes.begin() + ranges[i].offset));
  }
  CHECK((*src)->stats().reads == 1);  // all three within the 1 MiB coalescing distance
  std::vector<ByteRange> past{{bytes.size() - 4, 8}};
  CHECK((*src)->read(past).error().code() == Errc::corrupt);
}

TEST_CASE("read_into reads each range into its own place, merging none", "[format][io]") {
  const auto bytes = test::read_seed("mixed.vortex");
  REQUIRE(bytes.size() > 300);
  auto file = format::open_local_file(test::seed_path("mixed.vortex"));
  REQUIRE(file.ok());
  const auto memory = format::memory_source(format::Buffer::copy_of(bytes));
  for (const auto& src : {*file, memory}) {
    INFO(src->name());
    // Two ranges a plain read would merge, landing apart and out of file order.
    const std::vector<ByteRange> ranges{{200, 50}, {4, 100}};
    std::vector<uint8_t> out(400, 0xEE);
    const std::vector<uint8_t*> dsts{out.data() + 300, out.data() + 10};
    const auto before = src->stats();
    REQUIRE(src->read_into(ranges, dsts).ok());
    CHECK(std::equal(out.begin() + 300, out.begin() + 350, bytes.begin() + 200));
    CHECK(std::equal(out.begin() + 10, out.begin() + 110, bytes.begin() + 4));
    CHECK(out[9] == 0xEE);    // nothing written before a place
    CHECK(out[110] == 0xEE);  // nor after it
    CHECK(out[350] == 0xEE);
    const std::vector<ByteRange> past{{bytes.size() - 4, 8}};
    uint8_t* one[] = {out.data()};
    CHECK(src->read_into(past, one).error().code() == Errc::corrupt);
    // A place for every range, or nothing is read.
    auto short_of_places = src->read_into(ranges, one);
    REQUIRE(!short_of_places.ok());
    CHECK(short_of_places.error().code() == Errc::invalid);
    CHECK(out[0] == 0xEE);
    if (src == *file) {
      // One read per range, each counted.
      CHECK(src->stats().reads - before.reads == 2);
      CHECK(src->stats().bytes_read - before.bytes_read == 150);
    }
  }
}

TEST_CASE("a forked child reads through an inherited source while the parent reads too",
          "[format][io]") {
  // DataLoader workers are forked from a process that has already read: both sides must keep
  // reading correct bytes (the child takes a ring of its own instead of sharing the parent's).
  const auto bytes = test::read_seed("mixed.vortex");
  auto src = format::open_local_file(test::seed_path("mixed.vortex"));
  REQUIRE(src.ok());
  std::vector<ByteRange> ranges{{0, 64}, {bytes.size() / 2, 100}, {bytes.size() - 8, 8}};
  REQUIRE((*src)->read(ranges).ok());
  auto matches = [&](format::SegmentSource& s) {
    for (int round = 0; round < 200; ++round) {
      auto got = s.read(ranges);
      if (!got.ok()) return false;
      for (size_t i = 0; i < ranges.size(); ++i) {
        if (!std::equal((*got)[i].data(), (*got)[i].data() + ranges[i].length,
                        bytes.begin() + ranges[i].offset)) {
          return false;
        }
      }
    }
    return true;
  };
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) ::_exit(matches(**src) ? 0 : 1);
  CHECK(matches(**src));
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}

TEST_CASE("threads read one file side by side, each through a ring of its own that ends with it",
          "[format][io]") {
  // Scans of one file on several threads, or splits decoded in parallel, must not wait on one
  // another: reads take the calling thread's ring, not a ring (and a lock) of the file's.
  const auto bytes = test::read_seed("mixed.vortex");
  auto src = format::open_local_file(test::seed_path("mixed.vortex"));
  REQUIRE(src.ok());
  const uint64_t rings_before = format::open_read_rings();
  constexpr int kThreads = 6, kRounds = 300;
  std::atomic<int> wrong{0};
  std::atomic<uint64_t> most_rings{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const uint64_t at = (bytes.size() / kThreads) * t;
      const std::vector<ByteRange> ranges{{at, std::min<uint64_t>(512, bytes.size() - at)}};
      for (int round = 0; round < kRounds; ++round) {
        auto got = (*src)->read(ranges);
        if (!got.ok() || !std::equal((*got)[0].data(), (*got)[0].data() + ranges[0].length,
                                     bytes.begin() + at)) {
          ++wrong;
        }
        const uint64_t rings = format::open_read_rings();
        for (uint64_t seen = most_rings.load();
             rings > seen && !most_rings.compare_exchange_weak(seen, rings);) {
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(wrong == 0);
  CHECK((*src)->stats().requests == kThreads * kRounds);
  // At most one ring per thread, whatever the reads; each closed when its thread ended.
  CHECK(most_rings.load() <= rings_before + kThreads);
  CHECK(format::open_read_rings() == rings_before);
}
