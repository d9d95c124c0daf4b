// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>

#include "tests/format/nested_golden.hpp"

using namespace oc;
using namespace oc::test;
using namespace oc::test::nested_golden;

TEST_CASE("vortex.fixed_size_list golden segment decodes like the oracle",
          "[format][fixed_size_list]") {
  check_golden("fixed_size_list",
               make_fixed_size_list(DType::make_primitive(PType::i32, true), 3, true));
}

TEST_CASE("vortex.fixed_size_list asks for len x size elements", "[format][fixed_size_list]") {
  const auto t = make_fixed_size_list(DType::make_primitive(PType::u16, false), 2, true);
  auto n = node("vortex.fixed_size_list", {}, {},
                {primitive_node<uint16_t>({1, 2, 3, 4, 5, 6}), bool_node({true, false, true})});
  auto c = decode(n, t, 3);
  REQUIRE(c.ok());
  CHECK(render_rows(**c) == std::vector<std::string>{"[1,2]", "null", "[5,6]"});
  CHECK(decode(n, t, 2).error().code() == Errc::corrupt);  // 4 elements wanted, 6 stored
}

TEST_CASE("vortex.fixed_size_list of size zero has no elements", "[format][fixed_size_list]") {
  const auto t = make_fixed_size_list(DType::make_primitive(PType::u16, false), 0, false);
  auto c = decode(node("vortex.fixed_size_list", {}, {}, {primitive_node<uint16_t>({})}), t, 4);
  REQUIRE(c.ok());
  CHECK(render_rows(**c) == std::vector<std::string>{"[]", "[]", "[]", "[]"});
}

TEST_CASE("vortex.fixed_size_list rejects a wrong shape or dtype", "[format][fixed_size_list]") {
  const auto t = make_fixed_size_list(DType::make_primitive(PType::u16, false), 1, false);
  CHECK(decode(node("vortex.fixed_size_list"), t, 0).error().code() == Errc::corrupt);
  auto n = node("vortex.fixed_size_list", {}, {}, {primitive_node<uint16_t>({1})});
  CHECK(decode(n, make_list(DType::make_primitive(PType::u16, false), false), 1).error().code() ==
        Errc::corrupt);
  // A validity child needs a nullable dtype.
  n.children.push_back(bool_node({true}));
  CHECK(decode(n, t, 1).error().code() == Errc::corrupt);
}
