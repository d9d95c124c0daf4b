// SPDX-License-Identifier: Apache-2.0
// Strings in Arrow's view layout (format/string_views.hpp): conversions both ways, the checks
// on views read from a file, gathers, concatenation, nested columns, evaluation and export.
#include <catch2/catch.hpp>
#include <cstring>
#include <optional>

#include "format/arrow_export.hpp"
#include "format/expr_bind.hpp"
#include "format/expr_eval.hpp"
#include "format/expr_parser.hpp"
#include "tests/format/fixtures.hpp"
#include "tests/format/nested_golden.hpp"

using namespace oc;
using namespace oc::test;
using format::Column;
using format::kViewBytes;
using format::StringLayout;

namespace {

// An offsets-layout string column of @p v; std::nullopt is a null row.
ColumnPtr offsets_column(const std::vector<std::optional<std::string>>& v, bool binary = false) {
  auto c = std::make_shared<Column>();
  bool nullable = false;
  for (const auto& s : v) nullable = nullable || !s;
  c->dtype = binary ? DType::make_binary(nullable) : DType::make_utf8(nullable);
  c->length = v.size();
  std::vector<int32_t> offs{0};
  std::string bytes;
  if (nullable) c->validity = format::make_bitmap(v.size(), true);
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i])
      bytes += *v[i];
    else {
      format::bitmap_set(c->validity.mutable_data(), i, false);
      ++c->null_count;
    }
    offs.push_back(static_cast<int32_t>(bytes.size()));
  }
  c->buffers = {buffer_of(offs), bytes_of(bytes)};
  return c;
}

std::vector<std::optional<std::string>> values_of_strings(const Column& c) {
  std::vector<std::optional<std::string>> out;
  for (uint64_t i = 0; i < c.length; ++i) {
    if (c.is_valid(i))
      out.emplace_back(std::string(format::string_at(c, i)));
    else
      out.emplace_back(std::nullopt);
  }
  return out;
}

std::string view_bytes(const Column& c, uint64_t i) {
  return {reinterpret_cast<const char*>(c.buffers[0].data()) + (c.offset + i) * kViewBytes,
          kViewBytes};
}

// A view as vortex.varbinview stores it: size, then 12 bytes as given.
std::string raw_view(uint32_t size, const std::string& rest) {
  std::string v(16, '\0');
  std::memcpy(v.data(), &size, 4);
  std::memcpy(v.data() + 4, rest.data(), std::min<size_t>(rest.size(), 12));
  return v;
}

std::string ref(uint32_t size, const std::string& prefix, uint32_t index, uint32_t offset) {
  std::string rest = prefix.substr(0, 4);
  rest.resize(4, '\0');
  rest.append(reinterpret_cast<const char*>(&index), 4);
  rest.append(reinterpret_cast<const char*>(&offset), 4);
  return raw_view(size, rest);
}

Result<ColumnPtr> views_node(const std::vector<std::string>& data, const std::string& views,
                             uint64_t n, std::vector<ArrayView> validity = {}) {
  std::vector<Buffer> buffers;
  for (const auto& d : data) buffers.push_back(bytes_of(d));
  buffers.push_back(bytes_of(views));
  const auto t = DType::make_utf8(!validity.empty());
  return decode(node("vortex.varbinview", {}, buffers, std::move(validity)), t, n);
}

const std::vector<std::optional<std::string>> kMixed = {"",
                                                        "abcd",
                                                        std::nullopt,
                                                        "exactly12byt",
                                                        "thirteen byte",
                                                        "a much longer value than that",
                                                        std::nullopt,
                                                        "x"};

}  // namespace

TEST_CASE("offsets become views without copying a value, and views become offsets again",
          "[format][string_views]") {
  const ColumnPtr offs = offsets_column(kMixed);
  auto views = format::with_string_layout(offs, StringLayout::views);
  REQUIRE(views.ok());
  const Column& v = **views;
  CHECK(v.string_views);
  CHECK(values_of_strings(v) == kMixed);
  // Long values point into the offsets column's bytes buffer itself.
  REQUIRE(format::view_data(v).size() == 1);
  CHECK(format::view_data(v)[0].data() == offs->buffers[1].data());
  // Canonical: null rows all zeros, inlined values zero padded, prefixes equal to the value.
  CHECK(view_bytes(v, 2) == std::string(16, '\0'));
  CHECK(view_bytes(v, 1) == raw_view(4, "abcd"));
  CHECK(view_bytes(v, 4).substr(4, 4) == "thir");
  // The last buffer holds the data buffers' sizes as i64 (the C Data Interface's).
  int64_t size = 0;
  std::memcpy(&size, v.buffers.back().data(), 8);
  CHECK(size == static_cast<int64_t>(offs->buffers[1].size()));

  auto back = format::with_string_layout(*views, StringLayout::offsets);
  REQUIRE(back.ok());
  CHECK_FALSE((*back)->string_views);
  CHECK(values_of_strings(**back) == kMixed);
  CHECK(format::with_string_layout(*back, StringLayout::offsets).value() == *back);  // unchanged

  // A slice converts its own rows only.
  auto sliced = format::with_string_layout(format::slice(offs, 3, 3), StringLayout::views);
  REQUIRE(sliced.ok());
  CHECK(values_of_strings(**sliced) ==
        std::vector<std::optional<std::string>>(kMixed.begin() + 3, kMixed.begin() + 6));
}

TEST_CASE("short values only need no data buffer", "[format][string_views]") {
  auto v =
      format::with_string_layout(offsets_column({"a", "bc", std::nullopt}), StringLayout::views);
  REQUIRE(v.ok());
  CHECK(format::view_data(**v).empty());
  CHECK((*v)->buffers.size() == 2);  // views and an empty sizes buffer
  CHECK(values_of_strings(**v) == std::vector<std::optional<std::string>>{"a", "bc", std::nullopt});
}

TEST_CASE("canonical varbinview segments pass through without a copy", "[format][string_views]") {
  const std::string data = "..a value longer than twelve bytes";
  const Buffer views = bytes_of(raw_view(3, "abc") + ref(32, data.substr(2), 0, 2));
  const Buffer bytes = bytes_of(data);
  auto c = decode(node("vortex.varbinview", {}, {bytes, views}), DType::make_utf8(false), 2);
  REQUIRE(c.ok());
  CHECK((*c)->buffers[0].data() == views.data());
  CHECK(format::view_data(**c)[0].data() == bytes.data());
  CHECK(values_of_strings(**c) == std::vector<std::optional<std::string>>{"abc", data.substr(2)});
}

TEST_CASE("views that are not canonical are rewritten, not handed on", "[format][string_views]") {
  const std::string data = "0123456789abcdefghij";
  // Padding after an inlined value, and a prefix that is not the value's first bytes.
  const std::string views = raw_view(2, "ab\x7f") + ref(14, "zzzz", 0, 3);
  auto c = views_node({data}, views, 2);
  REQUIRE(c.ok());
  CHECK(values_of_strings(**c) ==
        std::vector<std::optional<std::string>>{"ab", data.substr(3, 14)});
  CHECK(view_bytes(**c, 0) == raw_view(2, "ab"));
  CHECK(view_bytes(**c, 1) == ref(14, "3456", 0, 3));
}

TEST_CASE("views outside their buffers or Arrow's i32 fields are corrupt",
          "[format][string_views]") {
  const std::string data(40, 'x');
  CHECK(views_node({data}, ref(13, "xxxx", 0, 28), 1).error().code() == Errc::corrupt);
  CHECK(views_node({data}, ref(13, "xxxx", 1, 0), 1).error().code() == Errc::corrupt);
  CHECK(views_node({data}, ref(0x80000000u, "xxxx", 0, 0), 1).error().code() == Errc::corrupt);
  CHECK(views_node({data}, ref(13, "xxxx", 0, 0x80000000u), 1).error().code() == Errc::corrupt);
  // The same view under a null row is never followed: it is zeroed instead.
  auto null_row = views_node({data}, ref(13, "xxxx", 1, 0), 1, {bool_node({false})});
  REQUIRE(null_row.ok());
  CHECK(view_bytes(**null_row, 0) == std::string(16, '\0'));
}

TEST_CASE("take and concat of views share the values; nulls get zero views",
          "[format][string_views]") {
  const ColumnPtr a =
      format::with_string_layout(offsets_column(kMixed), StringLayout::views).value();
  const std::vector<uint64_t> idx = {5, 0, 4, 2, 7};
  const std::vector<uint8_t> index_valid = {0b11101};  // index 1 is null
  auto taken = format::take(a, idx, index_valid.data());
  REQUIRE(taken.ok());
  CHECK((*taken)->string_views);
  CHECK(format::view_data(**taken)[0].data() == format::view_data(*a)[0].data());
  CHECK(values_of_strings(**taken) ==
        std::vector<std::optional<std::string>>{kMixed[5], std::nullopt, kMixed[4], std::nullopt,
                                                kMixed[7]});
  CHECK(view_bytes(**taken, 1) == std::string(16, '\0'));

  // Parts in either layout: the result is views, each part's buffers renumbered after the
  // ones before them.
  const ColumnPtr b = offsets_column({"another long value here", std::nullopt, "z"});
  const ColumnPtr parts[] = {format::slice(a, 3, 3), b, a};
  auto all = format::concat(parts);
  REQUIRE(all.ok());
  CHECK((*all)->string_views);
  CHECK(format::view_data(**all).size() == 3);
  std::vector<std::optional<std::string>> want(kMixed.begin() + 3, kMixed.begin() + 6);
  want.insert(want.end(), {"another long value here", std::nullopt, "z"});
  want.insert(want.end(), kMixed.begin(), kMixed.end());
  CHECK(values_of_strings(**all) == want);
  CHECK((*all)->null_count == 3);
}

TEST_CASE("nested strings change layout with their parents", "[format][string_views]") {
  const ColumnPtr s = offsets_column({"first value, long", "b"});
  const ColumnPtr elems = offsets_column({"p", "q", "a rather long element"});
  auto list = std::make_shared<Column>();
  list->dtype = nested_golden::make_list(elems->dtype, false);
  list->length = 2;
  list->buffers = {buffer_of(std::vector<int32_t>{0, 1, 3})};
  list->children = {elems};
  auto n = std::make_shared<Column>();
  n->dtype = DType::make_primitive(PType::i32, false);
  n->length = 2;
  n->buffers = {buffer_of(std::vector<int32_t>{1, 2})};
  auto batch = std::make_shared<Column>();
  batch->dtype = DType::make_struct({"s", "l", "n"}, {s->dtype, list->dtype, n->dtype}, false);
  batch->length = 2;
  batch->children = {s, list, n};
  auto v = format::with_string_layout(batch, StringLayout::views);
  REQUIRE(v.ok());
  CHECK((*v)->children[0]->string_views);
  CHECK((*v)->children[1]->children[0]->string_views);
  CHECK((*v)->children[2] == batch->children[2]);  // untouched
  CHECK(rows_of(**v) == rows_of(*batch));
  auto back = format::with_string_layout(*v, StringLayout::offsets);
  REQUIRE(back.ok());
  CHECK_FALSE((*back)->children[1]->children[0]->string_views);
  CHECK(rows_of(**back) == rows_of(*batch));
}

TEST_CASE("filters read views as they read offsets", "[format][string_views]") {
  const ColumnPtr offs = offsets_column(kMixed);
  const ColumnPtr views = format::with_string_layout(offs, StringLayout::views).value();
  for (const char* sql : {"s = 'thirteen byte'", "s > 'abcd'", "s LIKE 'a much%'", "s <> 'x'",
                          "s IS NULL", "s IN ('', 'exactly12byt')"}) {
    INFO(sql);
    auto batch_of = [](ColumnPtr c) {
      auto b = std::make_shared<Column>();
      b->dtype = DType::make_struct({"s"}, {c->dtype}, false);
      b->length = c->length;
      b->children = {std::move(c)};
      return b;
    };
    auto e = format::parse_expr(sql);
    REQUIRE(e.ok());
    auto bound = format::bind(**e, *batch_of(offs)->dtype, sql);
    REQUIRE(bound.ok());
    auto want = format::evaluate_truth(*bound, *batch_of(offs));
    auto got = format::evaluate_truth(*bound, *batch_of(views));
    REQUIRE(want.ok());
    REQUIRE(got.ok());
    CHECK(*got == *want);
  }
}

TEST_CASE("views export as vu / vz with their data buffers and sizes", "[format][string_views]") {
  ArrowSchema schema;
  REQUIRE(format::export_schema(*DType::make_utf8(true), "s", StringLayout::views, &schema).ok());
  CHECK(std::string(schema.format) == "vu");
  schema.release(&schema);
  REQUIRE(
      format::export_schema(*DType::make_binary(true), "b", StringLayout::offsets, &schema).ok());
  CHECK(std::string(schema.format) == "z");
  schema.release(&schema);

  const ColumnPtr v =
      format::with_string_layout(offsets_column(kMixed), StringLayout::views).value();
  ArrowArray array;
  REQUIRE(format::export_array(v, &array).ok());
  REQUIRE(array.n_buffers == 4);  // validity, views, one data buffer, sizes
  CHECK(array.buffers[1] == v->buffers[0].data());
  CHECK(array.buffers[2] == format::view_data(*v)[0].data());
  CHECK(static_cast<const int64_t*>(array.buffers[3])[0] ==
        static_cast<int64_t>(format::view_data(*v)[0].size()));
  array.release(&array);
}

TEST_CASE("a dictionary's gather by code: views in the codes' width, nulls from either side",
          "[format][string_views]") {
  const ColumnPtr values =
      format::with_string_layout(offsets_column({"zero", "one value that is long", "two"}),
                                 StringLayout::views)
          .value();
  auto codes_of = [](PType p, std::vector<uint64_t> v, std::vector<bool> valid = {}) {
    auto c = std::make_shared<Column>();
    c->dtype = DType::make_primitive(p, !valid.empty());
    c->length = v.size();
    const size_t w = format::ptype_width(p);
    c->buffers = {Buffer::allocate(v.size() * w)};
    for (size_t i = 0; i < v.size(); ++i)
      std::memcpy(c->buffers[0].mutable_data() + i * w, &v[i], w);
    if (!valid.empty()) {
      c->validity = format::make_bitmap(v.size(), true);
      for (size_t i = 0; i < v.size(); ++i) {
        if (!valid[i]) {
          format::bitmap_set(c->validity.mutable_data(), i, false);
          ++c->null_count;
        }
      }
    }
    return c;
  };
  for (PType p : {PType::u8, PType::u16, PType::u32, PType::u64}) {
    INFO(format::ptype_name(p));
    auto got = format::gather_codes(values, *codes_of(p, {2, 0, 1, 1}));
    REQUIRE(got.ok());
    CHECK((*got)->string_views);
    CHECK(values_of_strings(**got) ==
          std::vector<std::optional<std::string>>{"two", "zero", "one value that is long",
                                                  "one value that is long"});
    auto bad = format::gather_codes(values, *codes_of(p, {0, 3}));
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.error().code() == Errc::corrupt);
    CHECK_THAT(bad.error().message(), Catch::Contains("code 3 at position 1"));
  }
  // A null code, and a code past the end under a null, give null rows; a null value too.
  auto got = format::gather_codes(values, *codes_of(PType::u8, {1, 200, 0}, {true, false, true}));
  REQUIRE(got.ok());
  CHECK(values_of_strings(**got) ==
        std::vector<std::optional<std::string>>{"one value that is long", std::nullopt, "zero"});
  const ColumnPtr with_null =
      format::with_string_layout(offsets_column({"a", std::nullopt}), StringLayout::views).value();
  got = format::gather_codes(with_null, *codes_of(PType::u16, {1, 0, 1}));
  REQUIRE(got.ok());
  CHECK(values_of_strings(**got) ==
        std::vector<std::optional<std::string>>{std::nullopt, "a", std::nullopt});
  CHECK((*got)->null_count == 2);
}
