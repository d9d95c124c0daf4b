// SPDX-License-Identifier: Apache-2.0
#include <algorithm>
#include <catch2/catch.hpp>
#include <random>

#include "tests/format/arrow_ipc_fixtures.hpp"
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

namespace {

// A random list column of @p rows rows over i32 elements: lengths 0 to 40, list offsets from
// @p list_offset (a slice's), elements from a child that starts @p child_offset rows in, nulls
// among the lists and (with @p element_nulls) the elements.
ColumnPtr random_lists(std::mt19937_64& rng, uint64_t rows, uint64_t list_offset,
                       uint64_t child_offset, bool element_nulls) {
  std::vector<int32_t> offsets{static_cast<int32_t>(rng() % 5)};
  for (uint64_t i = 0; i < list_offset + rows; ++i)
    offsets.push_back(offsets.back() + static_cast<int32_t>(rng() % 41));
  const uint64_t elements = static_cast<uint64_t>(offsets.back()) + 3;
  auto child = std::make_shared<format::Column>();
  child->dtype = DType::make_primitive(PType::i32, element_nulls);
  child->length = elements;
  child->offset = child_offset;
  std::vector<int32_t> values(child_offset + elements);
  for (auto& v : values) v = static_cast<int32_t>(rng());
  child->buffers = {buffer_of(values)};
  if (element_nulls) {
    child->validity = format::make_bitmap(child_offset + elements, true);
    for (uint64_t k = 0; k < elements; ++k) {
      if (rng() % 7 == 0) {
        format::bitmap_set(child->validity.mutable_data(), child_offset + k, false);
        ++child->null_count;
      }
    }
  }
  auto c = std::make_shared<format::Column>();
  auto t = std::make_shared<DType>();
  t->kind = format::TypeKind::list;
  t->nullable = true;
  t->children = {child->dtype};
  c->dtype = t;
  c->length = rows;
  c->offset = list_offset;
  c->buffers = {buffer_of(offsets)};
  c->children = {child};
  c->validity = format::make_bitmap(list_offset + rows, true);
  for (uint64_t i = 0; i < rows; ++i) {
    if (rng() % 9 == 0) {
      format::bitmap_set(c->validity.mutable_data(), list_offset + i, false);
      ++c->null_count;
    }
  }
  return c;
}

}  // namespace

TEST_CASE("list take copies each taken list's elements, nulls and offsets included",
          "[format][column]") {
  std::mt19937_64 rng(41);
  const bool element_nulls = GENERATE(false, true);
  const uint64_t list_offset = GENERATE(0u, 3u);
  const uint64_t child_offset = GENERATE(0u, 5u);
  INFO("element nulls " << element_nulls << ", list offset " << list_offset << ", child offset "
                        << child_offset);
  for (int round = 0; round < 20; ++round) {
    const uint64_t rows = 1 + rng() % 300;
    const ColumnPtr c = random_lists(rng, rows, list_offset, child_offset, element_nulls);
    // Any order, repeats, and none at all.
    std::vector<uint64_t> idx(rng() % (2 * rows));
    for (auto& i : idx) i = rng() % rows;
    auto t = format::take(c, idx);
    REQUIRE(t.ok());
    std::vector<std::string> want;
    for (uint64_t i : idx) want.push_back(row_text(*c, i));
    CHECK(rows_of(**t) == want);
    CHECK((*t)->null_count == static_cast<int64_t>(std::count(want.begin(), want.end(), "null")));
    // Lists of lists take their inner lists row by row.
    const ColumnPtr nested =
        list_of(c, {0, static_cast<int32_t>(rows / 2), static_cast<int32_t>(rows)});
    auto tn = format::take(nested, std::vector<uint64_t>{1, 0, 1});
    REQUIRE(tn.ok());
    CHECK(rows_of(**tn) == std::vector<std::string>{row_text(*nested, 1), row_text(*nested, 0),
                                                    row_text(*nested, 1)});
  }
}

TEST_CASE("list take refuses offsets that decrease or pass the elements", "[format][column]") {
  auto child = std::make_shared<format::Column>();
  child->dtype = DType::make_primitive(PType::i32, false);
  child->length = 4;
  child->buffers = {buffer_of<int32_t>({1, 2, 3, 4})};
  auto decreasing = format::take(list_of(child, {0, 3, 2, 4}), std::vector<uint64_t>{0, 1});
  REQUIRE_FALSE(decreasing.ok());
  CHECK(decreasing.error().code() == Errc::invalid);
  auto past = format::take(list_of(child, {0, 2, 5}), std::vector<uint64_t>{1});
  REQUIRE_FALSE(past.ok());
  CHECK(past.error().code() == Errc::invalid);
  auto fine = format::take(list_of(child, {0, 2, 4}), std::vector<uint64_t>{1, 0});
  REQUIRE(fine.ok());
  CHECK(rows_of(**fine) == std::vector<std::string>{row_text(*list_of(child, {0, 2, 4}), 1),
                                                    row_text(*list_of(child, {0, 2, 4}), 0)});
}
