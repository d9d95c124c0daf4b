// SPDX-License-Identifier: Apache-2.0
// `onecopy status` for people: sizes in binary units with three significant digits, durations
// from milliseconds to days, and every figure of the status in the text.
#include <catch2/catch.hpp>
#include <sstream>

#include "client/status_text.hpp"

using oc::client::human_bytes;
using oc::client::human_duration;

TEST_CASE("sizes are printed in binary units", "[client][status-text]") {
  CHECK(human_bytes(0) == "0 B");
  CHECK(human_bytes(1023) == "1023 B");
  CHECK(human_bytes(1024) == "1.00 KiB");
  CHECK(human_bytes(1536) == "1.50 KiB");
  CHECK(human_bytes(20 * 1024 * 1024) == "20.0 MiB");
  CHECK(human_bytes(uint64_t{1} << 30) == "1.00 GiB");
  CHECK(human_bytes(uint64_t{3} * (uint64_t{1} << 30) + (uint64_t{1} << 28)) == "3.25 GiB");
  CHECK(human_bytes(999 * 1024) == "999 KiB");
  CHECK(human_bytes(1024 * 1024 - 1) == "1.00 MiB");  // rounds up into the next unit
  CHECK(human_bytes(UINT64_MAX) == "16.0 EiB");
}

TEST_CASE("durations are printed from milliseconds to days", "[client][status-text]") {
  CHECK(human_duration(850) == "850 ms");
  CHECK(human_duration(42'000) == "42 s");
  CHECK(human_duration(185'000) == "3 min 5 s");
  CHECK(human_duration((2 * 3600 + 7 * 60) * 1000) == "2 h 7 min");
  CHECK(human_duration(uint64_t{3 * 86'400 + 4 * 3600} * 1000) == "3 d 4 h");
}

TEST_CASE("the status text carries the figures in human units", "[client][status-text]") {
  oc::daemon::Status s;
  s.version = "9.9.9";
  s.uptime_ms = 61'000;
  s.bytes_delivered = 3 * 1024 * 1024;
  s.batches_delivered = 12;
  s.pool_bytes = 512 * 1024;
  s.pool_limit_bytes = uint64_t{4} << 30;
  s.descriptors = 7;
  s.descriptor_budget = 65'000;
  std::ostringstream out;
  oc::client::print_status(out, s);
  const std::string text = out.str();
  CHECK_THAT(text, Catch::Contains("onecopyd 9.9.9, up 1 min 1 s"));
  CHECK_THAT(text, Catch::Contains("bytes delivered:   3.00 MiB in 12 batches"));
  CHECK_THAT(text, Catch::Contains("pool:              512 KiB of 4.00 GiB"));
  CHECK_THAT(text, Catch::Contains("descriptors:       7 of 65000"));
  CHECK_THAT(text, Catch::Contains("GPU:               none"));
  CHECK_THAT(text, Catch::Contains("scans (this user's; root sees every user's): 0"));
}
