// SPDX-License-Identifier: Apache-2.0
// The one Content-Range parser: what single ranged GETs and multipart parts both rely on.
#include <catch2/catch.hpp>

#include "net/content_range.hpp"

using oc::net::parse_content_range;

TEST_CASE("Content-Range values parse as RFC 9110 writes them", "[net][content-range]") {
  auto a = parse_content_range("bytes 0-99/1000");
  REQUIRE(a);
  CHECK(a->first == 0);
  CHECK(a->last == 99);
  REQUIRE(a->complete);
  CHECK(*a->complete == 1000);
  auto star = parse_content_range(" \tBytes 5-5/*  ");  // unit in any case, OWS around
  REQUIRE(star);
  CHECK(star->first == 5);
  CHECK(star->last == 5);
  CHECK_FALSE(star->complete);
  auto last =
      parse_content_range("bytes 18446744073709551614-18446744073709551614/18446744073709551615");
  REQUIRE(last);
  CHECK(*last->complete == UINT64_MAX);
}

TEST_CASE("malformed Content-Range values are refused", "[net][content-range]") {
  for (const char* bad : {"", "bytes", "bytes ", "bytes 0-99", "bytes 0-99/", "bytes 9-0/100",
                          "bytes 0-100/100", "bytes -5/10", "bytes 0--5/10", "items 0-1/2",
                          "bytes 0-1/2x", "bytes 0-1/x", "bytes 0-1/*x", "bytes 0-99/1000 junk",
                          "bytes 0-18446744073709551616/*", "bytes0-1/2", "bytes 0 -1/2"}) {
    INFO("'" << bad << "'");
    CHECK_FALSE(parse_content_range(bad));
  }
}
