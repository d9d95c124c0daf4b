// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>

#include "format/proto/listview.pb.h"
#include "tests/format/nested_golden.hpp"

using namespace oc;
using namespace oc::test;
using namespace oc::test::nested_golden;

namespace {

std::string listview_meta(uint64_t elements_len, PType offset_ptype, PType size_ptype) {
  pb::ListViewMetadata m;
  m.set_elements_len(elements_len);
  m.set_offset_ptype(static_cast<int32_t>(offset_ptype));
  m.set_size_ptype(static_cast<int32_t>(size_ptype));
  return m.SerializeAsString();
}

ArrayView listview(std::vector<uint8_t> offsets, std::vector<uint8_t> sizes,
                   std::vector<ArrayView> extra = {}) {
  std::vector<ArrayView> children = {primitive_node<int16_t>({10, 11, 12, 13, 14}),
                                     primitive_node<uint8_t>(offsets),
                                     primitive_node<uint8_t>(sizes)};
  for (auto& e : extra) children.push_back(std::move(e));
  return node("vortex.listview", listview_meta(5, PType::u8, PType::u8), {}, std::move(children));
}

const DTypePtr kListOfI16 = make_list(DType::make_primitive(PType::i16, false), true);

}  // namespace

TEST_CASE("vortex.listview golden segments decode like the oracle", "[format][listview]") {
  check_golden("listview_overlap", make_list(DType::make_primitive(PType::i16, true), true));
  check_golden("listview_in_order", make_list(DType::make_primitive(PType::i64, true), true));
}

TEST_CASE("vortex.listview metadata matches upstream's protobuf bytes", "[format][listview]") {
  // What 0.93 writes for 15 elements with i32 offsets and sizes.
  const std::vector<uint8_t> bytes = {0x08, 0x0f, 0x10, 0x06, 0x18, 0x06};
  auto m = format::parse_metadata<pb::ListViewMetadata>(bytes, "vortex.listview");
  REQUIRE(m.ok());
  CHECK(m->elements_len() == 15);
  CHECK(m->offset_ptype() == static_cast<int32_t>(PType::i32));
  CHECK(m->size_ptype() == static_cast<int32_t>(PType::i32));
}

TEST_CASE("vortex.listview gathers overlapping and unordered views", "[format][listview]") {
  auto c = decode(listview({3, 0, 1, 5}, {2, 4, 0, 0}, {bool_node({true, true, true, false})}),
                  kListOfI16, 4);
  REQUIRE(c.ok());
  CHECK(render_rows(**c) == std::vector<std::string>{"[13,14]", "[10,11,12,13]", "[]", "null"});
  CHECK((*c)->children[0]->length == 6);
}

TEST_CASE("vortex.listview slices back-to-back views without gathering", "[format][listview]") {
  auto c = decode(listview({1, 3, 3}, {2, 0, 2}), kListOfI16, 3);
  REQUIRE(c.ok());
  CHECK(render_rows(**c) == std::vector<std::string>{"[11,12]", "[]", "[13,14]"});
  const int32_t* o = (*c)->offsets();
  CHECK(std::vector<int32_t>(o, o + 4) == std::vector<int32_t>{0, 2, 2, 4});
  // The elements are shared, not copied.
  CHECK((*c)->children[0]->offset == 1);
}

TEST_CASE("vortex.listview handles zero rows", "[format][listview]") {
  auto c = decode(listview({}, {}), kListOfI16, 0);
  REQUIRE(c.ok());
  CHECK((*c)->length == 0);
  CHECK((*c)->offsets()[0] == 0);
}

TEST_CASE("vortex.listview rejects views outside the elements", "[format][listview]") {
  // Even null rows must stay in bounds, as upstream validates every view.
  CHECK(decode(listview({4}, {2}), kListOfI16, 1).error().code() == Errc::corrupt);
  CHECK(decode(listview({6}, {0}), kListOfI16, 1).error().code() == Errc::corrupt);
  CHECK(
      decode(listview({0, 4}, {1, 2}, {bool_node({true, false})}), kListOfI16, 2).error().code() ==
      Errc::corrupt);
  // Offsets and sizes have len rows each.
  CHECK(decode(listview({0, 1}, {1}), kListOfI16, 2).error().code() == Errc::corrupt);
  auto signed_sizes = node("vortex.listview", listview_meta(5, PType::u8, PType::i8), {},
                           {primitive_node<int16_t>({10, 11, 12, 13, 14}),
                            primitive_node<uint8_t>({1}), primitive_node<int8_t>({-1})});
  CHECK(decode(signed_sizes, kListOfI16, 1).error().code() == Errc::corrupt);
}
