// SPDX-License-Identifier: Apache-2.0
// The per-second ring behind StatusReply.gbps_10s.
#include <catch2/catch.hpp>

#include "daemon/rate.hpp"

using oc::daemon::RateWindow;

TEST_CASE("rate window averages the seconds inside it", "[daemon][rate]") {
  RateWindow<10> r;
  REQUIRE(r.per_second(0, 0.5) == 0.0);
  r.add(0, 100);
  REQUIRE(r.per_second(0, 0.5) == 100.0);  // under a second up: divided by one second
  r.add(3, 300);
  REQUIRE(r.per_second(3, 4.0) == 100.0);  // 400 bytes over the 4 s since the start
  REQUIRE(r.per_second(20, 21.0) == 0.0);  // both have left the window
}

TEST_CASE("rate window reuses the slot of a second that has left", "[daemon][rate]") {
  RateWindow<10> r;
  r.add(2, 1000);
  r.add(12, 10);  // same slot, ten seconds later
  REQUIRE(r.per_second(12, 100.0) == 1.0);
  r.add(13, 20);
  REQUIRE(r.per_second(13, 100.0) == 3.0);
  REQUIRE(r.per_second(22, 100.0) == 2.0);  // second 12 has left, 13 has not
}
