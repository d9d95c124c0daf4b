// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>

#include "tests/format/nested_golden.hpp"

using namespace oc;
using namespace oc::test;
using namespace oc::test::nested_golden;

TEST_CASE("vortex.chunked golden segments decode like the oracle", "[format][chunked]") {
  check_golden("chunked_i64", DType::make_primitive(PType::i64, true));
  check_golden("chunked_list", make_list(DType::make_primitive(PType::i32, true), true));
}

TEST_CASE("vortex.chunked concatenates chunks sized by its offsets", "[format][chunked]") {
  auto n = node("vortex.chunked", {}, {},
                {primitive_node<uint64_t>({0, 2, 2, 3}), primitive_node<int16_t>({1, 2}),
                 primitive_node<int16_t>({}), primitive_node<int16_t>({3})});
  auto c = decode(n, DType::make_primitive(PType::i16, false), 3);
  REQUIRE(c.ok());
  CHECK(values_of<int16_t>(**c) == std::vector<int16_t>{1, 2, 3});

  auto none = node("vortex.chunked", {}, {}, {primitive_node<uint64_t>({0})});
  c = decode(none, DType::make_primitive(PType::i16, true), 0);
  REQUIRE(c.ok());
  CHECK((*c)->length == 0);
}

TEST_CASE("vortex.chunked rejects offsets that do not match", "[format][chunked]") {
  const auto t = DType::make_primitive(PType::i16, false);
  auto with_offsets = [](std::vector<uint64_t> offsets) {
    return node("vortex.chunked", {}, {},
                {primitive_node<uint64_t>(offsets), primitive_node<int16_t>({1, 2})});
  };
  CHECK(decode(with_offsets({0, 2}), t, 3).error().code() == Errc::corrupt);     // span != len
  CHECK(decode(with_offsets({0, 3}), t, 3).error().code() == Errc::corrupt);     // chunk too short
  CHECK(decode(with_offsets({2, 0}), t, 2).error().code() == Errc::corrupt);     // decreasing
  CHECK(decode(with_offsets({0, 1, 2}), t, 2).error().code() == Errc::corrupt);  // count
  CHECK(decode(node("vortex.chunked"), t, 0).error().code() == Errc::corrupt);
}

TEST_CASE("vortex.chunked offsets must end at the length, as vortex-data checks",
          "[format][chunked]") {
  // [3, 5] spans the 2 rows of its one chunk, but vortex-data requires the last offset to be
  // the array's length (and so the first to be 0).
  const auto t = DType::make_primitive(PType::i16, false);
  auto n = node("vortex.chunked", {}, {},
                {primitive_node<uint64_t>({3, 5}), primitive_node<int16_t>({1, 2})});
  auto r = decode(n, t, 2);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code() == Errc::corrupt);
  CHECK(r.error().to_string().find("end at 5") != std::string::npos);
  // No chunks: the one offset must be 0 for an empty array.
  r = decode(node("vortex.chunked", {}, {}, {primitive_node<uint64_t>({4})}), t, 0);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code() == Errc::corrupt);
}

TEST_CASE("vortex.chunked ignores upstream's legacy golden metadata", "[format][chunked]") {
  // vortex-array/goldenfiles/chunked.metadata: a FlexBuffers map {nchunks: 9} from before the
  // chunk offsets became child 0. Current writers leave the metadata empty; the children say
  // everything.
  const std::vector<uint8_t> legacy = {0x6e, 0x63, 0x68, 0x75, 0x6e, 0x6b, 0x73, 0x00, 0x01,
                                       0x09, 0x01, 0x01, 0x01, 0x01, 0x08, 0x02, 0x24, 0x01};
  auto n = node("vortex.chunked", {}, {},
                {primitive_node<uint64_t>({0, 1}), primitive_node<int16_t>({9})});
  n.metadata = legacy;
  auto c = decode(n, DType::make_primitive(PType::i16, false), 1);
  REQUIRE(c.ok());
  CHECK(values_of<int16_t>(**c) == std::vector<int16_t>{9});
}
