// SPDX-License-Identifier: Apache-2.0
// PartialSegment: a segment of which only the ranges decoders need are read, in rounds.
#include <catch2/catch.hpp>
#include <numeric>

#include "format/partial_segment.hpp"

using namespace oc;
using oc::format::ByteRange;
using oc::format::PartialSegment;

namespace {

// Fills @p ranges of @p seg with the low byte of each byte's file offset.
void fill_from_file(PartialSegment& seg, const std::vector<ByteRange>& ranges) {
  for (const ByteRange& r : ranges) {
    std::vector<uint8_t> bytes(r.length);
    for (uint64_t i = 0; i < r.length; ++i) bytes[i] = static_cast<uint8_t>(r.offset + i);
    seg.fill(r.offset, bytes);
  }
}

}  // namespace

TEST_CASE("a partial segment reads as zeros and asks only for the bytes it lacks",
          "[format][take]") {
  auto seg = *PartialSegment::reserve({1000, 10000});
  const format::Buffer all = seg->bytes();
  REQUIRE(all.size() == 10000);
  CHECK(all.data()[5000] == 0);
  CHECK_FALSE(seg->has_pending());

  // Needs grow to 64-byte boundaries and come back in file offsets, merged.
  CHECK_FALSE(seg->need(100, 8));
  CHECK_FALSE(seg->need(120, 100));
  CHECK(seg->has_pending());
  const auto pending = seg->take_pending();
  REQUIRE(pending.size() == 1);
  CHECK(pending[0].offset == 1000 + 64);
  CHECK(pending[0].length == 256 - 64);
  CHECK_FALSE(seg->has_pending());
  fill_from_file(*seg, pending);
  CHECK(seg->need(100, 8));
  CHECK(seg->need(64, 192));
  CHECK_FALSE(seg->has_pending());
  CHECK(seg->bytes_resident() == 192);
  CHECK(all.data()[100] == static_cast<uint8_t>(1100));

  // Only the gaps around what is read are asked for; the last range stops at the segment's end.
  CHECK_FALSE(seg->need(0, 9999));
  const auto gaps = seg->take_pending();
  REQUIRE(gaps.size() == 2);
  CHECK(gaps[0].offset == 1000);
  CHECK(gaps[0].length == 64);
  CHECK(gaps[1].offset == 1000 + 256);
  CHECK(gaps[1].end() == 11000);
  fill_from_file(*seg, gaps);
  CHECK(seg->need(0, 10000));
  CHECK(seg->bytes_resident() == 10000);
  for (uint64_t i : {uint64_t{0}, uint64_t{255}, uint64_t{256}, uint64_t{9999}}) {
    INFO(i);
    CHECK(all.data()[i] == static_cast<uint8_t>(1000 + i));
  }
}

TEST_CASE("filled ranges merge with the ones they touch, in any order", "[format][take]") {
  auto seg = *PartialSegment::reserve({0, 4096});
  fill_from_file(*seg, {{1024, 64}, {0, 64}, {2048, 64}});
  CHECK(seg->bytes_resident() == 192);
  fill_from_file(*seg, {{64, 960}, {1088, 960}});  // closes both gaps
  CHECK(seg->bytes_resident() == 2112);
  CHECK(seg->need(0, 2112));
  CHECK_FALSE(seg->need(2100, 100));
  const auto pending = seg->take_pending();
  REQUIRE(pending.size() == 1);
  CHECK(pending[0].offset == 2112);
  CHECK(pending[0].end() == 2240);
}

TEST_CASE("an empty segment cannot be reserved", "[format][take]") {
  auto r = PartialSegment::reserve({10, 0});
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code() == Errc::invalid);
}
