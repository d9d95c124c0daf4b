// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>

#include "tests/format/fixtures.hpp"

using namespace oc;
using namespace oc::test;

TEST_CASE("slice, take and concat keep values and nulls", "[format][column]") {
  auto n = primitive_node<int16_t>({10, 11, 12, 13, 14});
  n.children.push_back(bool_node({true, true, false, true, true}));
  auto c = *decode(n, DType::make_primitive(PType::i16, true), 5);

  auto s = format::slice(c, 1, 3);
  CHECK(values_of<int16_t>(*s) == std::vector<int16_t>{11, 12, 13});
  CHECK(s->null_count == 1);
  CHECK_FALSE(s->is_valid(1));

  auto t = format::take(c, std::vector<uint64_t>{4, 2, 0, 0});
  REQUIRE(t.ok());
  CHECK(values_of<int16_t>(**t)[0] == 14);
  CHECK(validity_of(**t) == std::vector<bool>{true, false, true, true});
  CHECK(format::take(c, std::vector<uint64_t>{5}).error().code() == Errc::invalid);

  std::vector<ColumnPtr> parts{s, c};
  auto cat = format::concat(parts);
  REQUIRE(cat.ok());
  CHECK((*cat)->length == 8);
  CHECK(values_of<int16_t>(**cat) == std::vector<int16_t>{11, 12, 13, 10, 11, 12, 13, 14});
  CHECK((*cat)->null_count == 2);
}

TEST_CASE("string take and concat rebuild offsets", "[format][column]") {
  auto c = std::make_shared<format::Column>();
  c->dtype = DType::make_utf8(false);
  c->length = 3;
  c->buffers = {buffer_of<int32_t>({0, 1, 3, 6}), bytes_of("abbccc")};
  ColumnPtr col = c;
  auto t = format::take(col, std::vector<uint64_t>{2, 0});
  REQUIRE(t.ok());
  CHECK(strings_of(**t) == std::vector<std::string>{"ccc", "a"});
  std::vector<ColumnPtr> parts{format::slice(col, 1, 2), *t};
  auto cat = format::concat(parts);
  REQUIRE(cat.ok());
  CHECK(strings_of(**cat) == std::vector<std::string>{"bb", "ccc", "ccc", "a"});
}
