// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>

#include <atomic>
#include <new>

#include "format/parallel.hpp"

TEST_CASE("parallel_for runs every item once", "[format][parallel]") {
  std::vector<std::atomic<int>> seen(1000);
  oc::format::parallel_for(seen.size(), 1 << 20, [&](size_t i) { seen[i] += 1; });
  for (const auto& s : seen) CHECK(s.load() == 1);
}

TEST_CASE("an exception in parallel_for reaches the caller instead of ending the process",
          "[format][parallel]") {
  for (const uint64_t rows : {uint64_t{1}, uint64_t{1} << 20}) {  // caller alone, then threads
    INFO(rows);
    std::atomic<size_t> ran{0};
    CHECK_THROWS_AS(oc::format::parallel_for(10'000, rows,
                                             [&](size_t i) {
                                               if (i == 3) throw std::bad_alloc();
                                               ++ran;
                                             }),
                    std::bad_alloc);
    CHECK(ran.load() < 10'000);  // the rest stopped
  }
}
