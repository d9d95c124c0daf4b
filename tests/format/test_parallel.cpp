// SPDX-License-Identifier: Apache-2.0
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <new>
#include <set>
#include <thread>

#include "format/parallel.hpp"

using oc::Errc;
using oc::Result;
using oc::format::parallel_for;

TEST_CASE("parallel_for runs every item once", "[format][parallel]") {
  std::vector<std::atomic<int>> seen(1000);
  REQUIRE(parallel_for(seen.size(), 1 << 20, [&](size_t i) -> Result<void> {
            seen[i] += 1;
            return {};
          }).ok());
  for (const auto& s : seen) CHECK(s.load() == 1);
}

TEST_CASE("an item's error or exception reaches the caller and stops the rest",
          "[format][parallel]") {
  for (const uint64_t rows : {uint64_t{1}, uint64_t{1} << 20}) {  // caller alone, then the pool
    INFO(rows);
    std::atomic<size_t> ran{0};
    auto r = parallel_for(10'000, rows, [&](size_t i) -> Result<void> {
      if (i == 3) throw std::bad_alloc();
      ++ran;
      return {};
    });
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code() == Errc::out_of_memory);
    CHECK(ran.load() < 10'000);

    r = parallel_for(10'000, rows, [&](size_t i) -> Result<void> {
      if (i == 5) return OC_ERROR(Errc::corrupt, "item {}", i);
      return {};
    });
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code() == Errc::corrupt);
    CHECK(r.error().message() == "item 5");
  }
}

TEST_CASE("nested parallel_for calls share one bounded pool and finish", "[format][parallel]") {
  // Outer items each run an inner parallel_for (fields, then slices of a string column): a
  // caller that waited for queued helpers would deadlock here once every pool thread waits.
  std::mutex mu;
  std::set<std::thread::id> threads;
  std::atomic<uint64_t> sum{0};
  for (int round = 0; round < 20; ++round) {
    REQUIRE(parallel_for(16, 1 << 20, [&](size_t i) -> Result<void> {
              return parallel_for(64, 1 << 20, [&](size_t j) -> Result<void> {
                {
                  std::lock_guard lock(mu);
                  threads.insert(std::this_thread::get_id());
                }
                sum += i * 64 + j;
                return {};
              });
            }).ok());
  }
  CHECK(sum.load() == 20 * (1024 * 1023 / 2));
  // The callers plus the pool: never more threads than decode_threads() with this one caller.
  CHECK(threads.size() <= oc::format::decode_threads());
}

TEST_CASE("a forked child decodes in parallel with a pool of its own", "[format][parallel]") {
  REQUIRE(parallel_for(8, 1 << 20, [](size_t) -> Result<void> { return {}; }).ok());  // started
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    std::atomic<int> n{0};
    auto r = parallel_for(1000, 1 << 20, [&](size_t) -> Result<void> {
      ++n;
      return {};
    });
    ::_exit(r.ok() && n.load() == 1000 ? 0 : 1);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}
