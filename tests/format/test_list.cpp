// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>

#include "format/proto/list.pb.h"
#include "tests/format/nested_golden.hpp"

using namespace oc;
using namespace oc::test;
using namespace oc::test::nested_golden;

namespace {

std::string list_meta(uint64_t elements_len, PType offset_ptype) {
  pb::ListMetadata m;
  m.set_elements_len(elements_len);
  m.set_offset_ptype(static_cast<int32_t>(offset_ptype));
  return m.SerializeAsString();
}

std::vector<int32_t> arrow_offsets(const format::Column& c) {
  return {c.offsets(), c.offsets() + c.length + 1};
}

}  // namespace

TEST_CASE("vortex.list golden segments decode like the oracle", "[format][list]") {
  const auto i32 = DType::make_primitive(PType::i32, true);
  check_golden("list_i32", make_list(i32, true));
  check_golden("list_narrow_offsets", make_list(i32, true));
  check_golden("list_nested",
               make_list(make_list(DType::make_primitive(PType::i8, true), true), true));
}

TEST_CASE("vortex.list metadata matches upstream's protobuf bytes", "[format][list]") {
  // What 0.93 writes for 15 elements with i32 offsets (tags 1 and 2, varints).
  const std::vector<uint8_t> bytes = {0x08, 0x0f, 0x10, 0x06};
  auto m = format::parse_metadata<pb::ListMetadata>(bytes, "vortex.list");
  REQUIRE(m.ok());
  CHECK(m->elements_len() == 15);
  CHECK(m->offset_ptype() == static_cast<int32_t>(PType::i32));
}

TEST_CASE("vortex.list re-bases offsets that do not start at zero", "[format][list]") {
  // Elements 10..15; lists [12,13], [], [14]: offsets 2,4,4,5 as u16.
  auto n = node(
      "vortex.list", list_meta(6, PType::u16), {},
      {primitive_node<int64_t>({10, 11, 12, 13, 14, 15}), primitive_node<uint16_t>({2, 4, 4, 5})});
  auto c = decode(n, make_list(DType::make_primitive(PType::i64, false), false), 3);
  REQUIRE(c.ok());
  CHECK(arrow_offsets(**c) == std::vector<int32_t>{0, 2, 2, 3});
  CHECK(render_rows(**c) == std::vector<std::string>{"[12,13]", "[]", "[14]"});
}

TEST_CASE("vortex.list handles zero rows and validity", "[format][list]") {
  const auto t = make_list(DType::make_primitive(PType::u8, false), true);
  auto empty = node("vortex.list", list_meta(0, PType::i64), {},
                    {primitive_node<uint8_t>({}), primitive_node<int64_t>({0})});
  auto c = decode(empty, t, 0);
  REQUIRE(c.ok());
  CHECK(arrow_offsets(**c) == std::vector<int32_t>{0});

  auto n = node("vortex.list", list_meta(2, PType::u8), {},
                {primitive_node<uint8_t>({1, 2}), primitive_node<uint8_t>({0, 1, 1, 2}),
                 bool_node({true, false, true})});
  c = decode(n, t, 3);
  REQUIRE(c.ok());
  CHECK((*c)->null_count == 1);
  CHECK(render_rows(**c) == std::vector<std::string>{"[1]", "null", "[2]"});
}

TEST_CASE("vortex.list rejects malformed offsets", "[format][list]") {
  const auto t = make_list(DType::make_primitive(PType::u8, false), false);
  auto with_offsets = [](ArrayView offsets, uint64_t elements_len, PType p) {
    return node("vortex.list", list_meta(elements_len, p), {},
                {primitive_node<uint8_t>({1, 2, 3}), std::move(offsets)});
  };
  SECTION("decreasing") {
    auto c = decode(with_offsets(primitive_node<int32_t>({0, 2, 1}), 3, PType::i32), t, 2);
    CHECK(c.error().code() == Errc::corrupt);
  }
  SECTION("negative") {
    auto c = decode(with_offsets(primitive_node<int32_t>({-1, 2, 3}), 3, PType::i32), t, 2);
    CHECK(c.error().code() == Errc::corrupt);
  }
  SECTION("past the elements") {
    auto c = decode(with_offsets(primitive_node<int32_t>({0, 2, 4}), 3, PType::i32), t, 2);
    CHECK(c.error().code() == Errc::corrupt);
  }
  SECTION("float offsets") {
    auto c = decode(with_offsets(primitive_node<float>({0, 2, 3}), 3, PType::f32), t, 2);
    CHECK(c.error().code() == Errc::corrupt);
  }
  SECTION("too few offsets") {
    auto c = decode(with_offsets(primitive_node<int32_t>({0, 2}), 3, PType::i32), t, 2);
    CHECK(c.error().code() == Errc::corrupt);
  }
  SECTION("elements_len disagrees with the elements child") {
    auto c = decode(with_offsets(primitive_node<int32_t>({0, 1, 2}), 2, PType::i32), t, 2);
    CHECK(c.error().code() == Errc::corrupt);
  }
  SECTION("missing offsets child") {
    auto n =
        node("vortex.list", list_meta(3, PType::i32), {}, {primitive_node<uint8_t>({1, 2, 3})});
    CHECK(decode(n, t, 2).error().code() == Errc::corrupt);
  }
  SECTION("garbage metadata") {
    auto n = with_offsets(primitive_node<int32_t>({0, 1, 3}), 3, PType::i32);
    n.metadata = {0xff};
    CHECK(decode(n, t, 2).error().code() == Errc::corrupt);
  }
}

TEST_CASE("vortex.list rejects upstream's legacy flexbuffer golden metadata", "[format][list]") {
  // vortex-array/goldenfiles/list.metadata predates protobuf metadata: a FlexBuffers map
  // {validity: AllValid, elements_len, offset_ptype: u64}. No current writer produces it, and
  // it must fail cleanly rather than be misread.
  const std::vector<uint8_t> legacy = {
      0x76, 0x61, 0x6c, 0x69, 0x64, 0x69, 0x74, 0x79, 0x00, 0x08, 0x41, 0x6c, 0x6c, 0x56,
      0x61, 0x6c, 0x69, 0x64, 0x00, 0x65, 0x6c, 0x65, 0x6d, 0x65, 0x6e, 0x74, 0x73, 0x5f,
      0x6c, 0x65, 0x6e, 0x00, 0x6f, 0x66, 0x66, 0x73, 0x65, 0x74, 0x5f, 0x70, 0x74, 0x79,
      0x70, 0x65, 0x00, 0x03, 0x75, 0x36, 0x34, 0x00, 0x03, 0x20, 0x14, 0x35, 0x00, 0x00,
      0x05, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00,
      0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff,
      0xff, 0xff, 0xff, 0xff, 0x2a, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x56, 0x00,
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0b, 0x14, 0x14, 0x1b, 0x27, 0x01};
  auto n = node("vortex.list", {}, {},
                {primitive_node<uint8_t>({1, 2, 3}), primitive_node<uint64_t>({0, 1, 3})});
  n.metadata = legacy;
  auto c = decode(n, make_list(DType::make_primitive(PType::u8, false), false), 2);
  REQUIRE_FALSE(c.ok());
  CHECK(c.error().code() == Errc::corrupt);
}
