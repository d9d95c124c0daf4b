// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "config/defaults.hpp"
#include "format/expr_eval.hpp"
#include "format/expr_parser.hpp"
#include "tests/format/nested_golden.hpp"

using namespace oc;
using namespace oc::format;

namespace {

std::string round_trip(const std::string& sql) {
  auto e = parse_expr(sql);
  INFO(sql);
  if (!e.ok()) FAIL(e.error().to_string());
  const std::string printed = to_string(**e);
  auto again = parse_expr(printed);
  REQUIRE(again.ok());
  CHECK(to_string(**again) == printed);
  return printed;
}

// The message of a failed parse, with the error code checked.
std::string parse_error(const std::string& sql, Errc code = Errc::invalid) {
  auto e = parse_expr(sql);
  INFO(sql);
  REQUIRE_FALSE(e.ok());
  CHECK(e.error().code() == code);
  return e.error().message();
}

}  // namespace

TEST_CASE("every construct prints back as the SQL it parsed from", "[expr]") {
  for (const std::string sql : {"a = 1",
                                "a != 1",
                                "a < 1",
                                "a <= 1",
                                "a > 1",
                                "a >= 1",
                                "a.b.c = 'x'",
                                "\"weird name\".x = 'it''s'",
                                "\"a\"\"b\" = 1",
                                "\"date\" = 1",
                                "a IS NULL",
                                "a IS NOT NULL",
                                "a IN (1, 2, 3)",
                                "a BETWEEN 1 AND 10",
                                "a LIKE 'pre%'",
                                "a LIKE 'exact'",
                                "NOT a",
                                "a = TRUE",
                                "a = FALSE",
                                "a = NULL",
                                "a = -5",
                                "a = 18446744073709551615",
                                "a = -9223372036854775808",
                                "a = 1.5",
                                "a = 1e+20",
                                "a = -0.25",
                                "a = DATE '2024-01-31'",
                                "a = DATE '1969-12-31'",
                                "a = TIMESTAMP '2024-01-31 12:34:56'",
                                "a = TIMESTAMP '2024-01-31 12:34:56.000001'",
                                "a = TIMESTAMP '1969-12-31 23:59:59.5'",
                                "a = 1 AND b = 2 AND c = 3",
                                "a = 1 OR b = 2 OR c = 3",
                                "NOT a IN (1, 2)",
                                "NOT a BETWEEN 1 AND 2",
                                "NOT a LIKE 'x%'",
                                "(NOT a) = TRUE"}) {
    const std::string printed = round_trip(sql);
    if (sql == "a = TIMESTAMP '1969-12-31 23:59:59.5'") {
      CHECK(printed == "a = TIMESTAMP '1969-12-31 23:59:59.500000'");
    } else {
      CHECK(printed == sql);
    }
  }
}

TEST_CASE("the parser normalises spelling: keywords, <>, floats, NOT forms", "[expr]") {
  CHECK(round_trip("a <> 1") == "a != 1");
  CHECK(round_trip("x is not null and y between 1 and 2") == "x IS NOT NULL AND y BETWEEN 1 AND 2");
  CHECK(round_trip("a = 3.0") == "a = 3.0");
  CHECK(round_trip("a = 1E3") == "a = 1000.0");
  CHECK(round_trip("a NOT IN (1)") == "NOT a IN (1)");
  CHECK(round_trip("a NOT LIKE 'p%'") == "NOT a LIKE 'p%'");
  CHECK(round_trip("a NOT BETWEEN 1 AND 2") == "NOT a BETWEEN 1 AND 2");
  CHECK(round_trip("((a = 1))") == "a = 1");
  CHECK(round_trip("date '2024-02-29' < d") == "DATE '2024-02-29' < d");
}

TEST_CASE("precedence: predicates, then NOT, then AND, then OR", "[expr]") {
  auto e = parse_expr("a = 1 OR b = 2 AND NOT c = 3");
  REQUIRE(e.ok());
  REQUIRE((*e)->kind == ExprKind::or_);
  REQUIRE((*e)->children.size() == 2);
  const auto& rhs = *(*e)->children[1];
  REQUIRE(rhs.kind == ExprKind::and_);
  CHECK(rhs.children[1]->kind == ExprKind::not_);
  CHECK(rhs.children[1]->children[0]->kind == ExprKind::compare);

  CHECK(round_trip("(a = 1 OR b = 2) AND c = 3") == "(a = 1 OR b = 2) AND c = 3");
  CHECK(round_trip("a = 1 OR (b = 2 AND c = 3)") == "a = 1 OR b = 2 AND c = 3");
  CHECK(round_trip("a AND (b AND c)") == "a AND (b AND c)");
  CHECK(round_trip("NOT (a OR b)") == "NOT (a OR b)");
  CHECK(round_trip("NOT NOT a") == "NOT NOT a");

  // A chain of one operator is one wide node, not a deep one.
  auto chain = parse_expr("a AND b AND c AND d OR e");
  REQUIRE(chain.ok());
  CHECK((*chain)->children[0]->children.size() == 4);
}

TEST_CASE("parse errors name the token and point at its column", "[expr]") {
  CHECK(parse_error("a > 3 AND (b)) ") ==
        "unexpected ')' at column 14\n  a > 3 AND (b)) \n               ^");
  CHECK(parse_error("a # 3") == "unexpected character '#' at column 3\n  a # 3\n    ^");
  CHECK(parse_error("a = 'abc") == "unterminated string at column 5\n  a = 'abc\n      ^");
  CHECK(parse_error("(a = 1") == "unexpected end of input at column 7\n  (a = 1\n        ^");
  CHECK(parse_error("a = DATE '2023-02-29'")
            .starts_with("invalid DATE '2023-02-29': expected 'YYYY-MM-DD' at column 10"));
  CHECK(parse_error("a = TIMESTAMP '2024-01-31 24:00:00'").find("at column 15") !=
        std::string::npos);
  CHECK(parse_error("a LIKE '%x'", Errc::unsupported)
            .starts_with("unsupported LIKE pattern '%x': only exact matches and 'prefix%'"));
  CHECK(parse_error("a LIKE 'a_c'", Errc::unsupported).find("at column 8") != std::string::npos);
  CHECK(parse_error("a LIKE b").starts_with("unexpected 'b' at column 8"));
  CHECK(parse_error("a = 99999999999999999999")
            .starts_with("integer literal out of range at column 5"));
  CHECK(parse_error("a = -9223372036854775809").starts_with("integer literal out of range"));
  CHECK(parse_error("a = 1e999").starts_with("float literal out of range at column 5"));
  CHECK(parse_error("a = 12ab").starts_with("malformed number at column 7"));
  CHECK(parse_error("a IN ()").starts_with("unexpected ')' at column 7"));
  CHECK(parse_error("a IS 3").starts_with("unexpected '3' at column 6"));
  CHECK(parse_error("a BETWEEN 1 OR 2").starts_with("unexpected 'OR' at column 13"));
  CHECK(parse_error("\"\" = 1").starts_with("empty quoted identifier at column 1"));
  CHECK(parse_error("a. = 1").starts_with("unexpected '=' at column 4"));
  CHECK(parse_error("AND").starts_with("unexpected 'AND' at column 1"));
  CHECK(parse_error("").starts_with("unexpected end of input at column 1"));
  CHECK(parse_error("a =\t'x\n").starts_with("unterminated string at column 5\n  a = 'x \n"));
}

TEST_CASE("nesting deeper than max_expr_depth is rejected, not a stack overflow", "[expr]") {
  const uint32_t max = defaults().max_expr_depth;
  std::string ok_sql = std::string(max, '(') + "a" + std::string(max, ')');
  CHECK(parse_expr(ok_sql).ok());
  std::string deep = std::string(max + 1, '(') + "a" + std::string(max + 1, ')');
  CHECK(parse_error(deep).starts_with(
      fmt::format("expression nested deeper than {} levels at column {}", max, max + 1)));
  std::string nots;
  for (uint32_t i = 0; i < 100'000; ++i) nots += "NOT ";
  CHECK(parse_error(nots + "a").starts_with("expression nested deeper than"));
  std::string wide = "a";
  for (int i = 0; i < 100'000; ++i) wide += " AND a";
  CHECK(parse_expr(wide).ok());
}

TEST_CASE("the parser fuzz entry point round-trips what it accepts", "[expr]") {
  const std::string sql = "x.y BETWEEN -1 AND 2.5 OR NOT (s LIKE 'ab%' AND t IS NULL)";
  auto bytes = std::span(reinterpret_cast<const uint8_t*>(sql.data()), sql.size());
  CHECK(fuzz_parse_expr(bytes).ok());
  CHECK_FALSE(fuzz_parse_expr(bytes.first(10)).ok());
}

TEST_CASE("every fuzz seed is a valid expression that round-trips", "[expr]") {
  const std::filesystem::path dir = OC_SOURCE_DIR "/tests/fuzz/seeds/expr_parser";
  int seen = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    std::ifstream in(entry.path(), std::ios::binary);
    const std::string sql((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    INFO(entry.path().filename().string() << ": " << sql);
    auto r = fuzz_parse_expr({reinterpret_cast<const uint8_t*>(sql.data()), sql.size()});
    CHECK(r.ok());
    ++seen;
  }
  CHECK(seen == 5);
}

namespace {

Buffer validity_of(const std::vector<bool>& valid) {
  if (valid.empty()) return {};
  Buffer b = make_bitmap(valid.size(), true);
  for (size_t i = 0; i < valid.size(); ++i) bitmap_set(b.mutable_data(), i, valid[i]);
  return b;
}

std::shared_ptr<Column> base(DTypePtr t, uint64_t len, const std::vector<bool>& valid) {
  auto c = std::make_shared<Column>();
  c->dtype = std::move(t);
  c->length = len;
  c->validity = validity_of(valid);
  c->null_count = c->validity.empty() ? 0 : count_nulls(c->validity.data(), 0, len);
  return c;
}

template <class T>
ColumnPtr prim(PType p, const std::vector<T>& v, const std::vector<bool>& valid = {},
               DTypePtr t = nullptr) {
  auto c = base(t ? t : DType::make_primitive(p, !valid.empty()), v.size(), valid);
  Buffer b = Buffer::allocate(v.size() * sizeof(T));
  if (!v.empty()) std::memcpy(b.mutable_data(), v.data(), v.size() * sizeof(T));
  c->buffers.push_back(b);
  return c;
}

ColumnPtr bools(const std::vector<bool>& v, const std::vector<bool>& valid = {}) {
  auto c = base(DType::make_bool(!valid.empty()), v.size(), valid);
  c->buffers.push_back(validity_of(v));
  return c;
}

ColumnPtr strings(const std::vector<std::string>& v, const std::vector<bool>& valid = {},
                  bool binary = false) {
  auto c = base(binary ? DType::make_binary(!valid.empty()) : DType::make_utf8(!valid.empty()),
                v.size(), valid);
  std::vector<int32_t> offs{0};
  std::string bytes;
  for (const auto& s : v) {
    bytes += s;
    offs.push_back(static_cast<int32_t>(bytes.size()));
  }
  Buffer o = Buffer::allocate(offs.size() * 4);
  std::memcpy(o.mutable_data(), offs.data(), offs.size() * 4);
  c->buffers = {o, Buffer::copy_of({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()})};
  return c;
}

ColumnPtr strukt(std::vector<std::string> names, std::vector<ColumnPtr> fields,
                 const std::vector<bool>& valid = {}) {
  std::vector<DTypePtr> types;
  for (const auto& f : fields) types.push_back(f->dtype);
  auto c = base(DType::make_struct(std::move(names), std::move(types), !valid.empty()),
                fields.empty() ? 0 : fields[0]->length, valid);
  c->children = std::move(fields);
  return c;
}

constexpr Truth T = Truth::true_;
constexpr Truth F = Truth::false_;
constexpr Truth N = Truth::null;

// Parses, binds against the batch's own dtype and evaluates.
std::vector<Truth> truth(const std::string& sql, const ColumnPtr& batch) {
  INFO(sql);
  auto e = parse_expr(sql);
  REQUIRE(e.ok());
  auto b = format::bind(**e, *batch->dtype, sql);
  if (!b.ok()) FAIL(b.error().to_string());
  auto t = evaluate_truth(*b, *batch);
  if (!t.ok()) FAIL(t.error().to_string());
  return *t;
}

Error bind_error(const std::string& sql, const DType& schema) {
  auto e = parse_expr(sql);
  REQUIRE(e.ok());
  auto b = format::bind(**e, schema, sql);
  INFO(sql);
  REQUIRE_FALSE(b.ok());
  return b.error();
}

}  // namespace

TEST_CASE("binding resolves nested columns and reports what it reads", "[expr]") {
  auto batch =
      strukt({"a", "s", "n"},
             {prim<int32_t>(PType::i32, {1}), strings({"x"}),
              strukt({"b", "weird name"}, {prim<double>(PType::f64, {1.0}), bools({true})})});
  auto e = parse_expr("n.b > 1 AND (a = 2 OR n.\"weird name\") AND a IN (1, 2) AND s IS NULL");
  REQUIRE(e.ok());
  auto b = format::bind(**e, *batch->dtype);
  REQUIRE(b.ok());
  REQUIRE(b->columns.size() == 4);
  CHECK(b->columns[0].path == std::vector<std::string>{"n", "b"});
  CHECK(b->columns[0].indices == std::vector<uint32_t>{2, 0});
  CHECK(b->columns[1].path == std::vector<std::string>{"a"});
  CHECK(b->columns[2].path == std::vector<std::string>{"n", "weird name"});
  CHECK(b->columns[3].path == std::vector<std::string>{"s"});
}

TEST_CASE("binding errors name the problem and point at the token", "[expr]") {
  auto batch = strukt({"a", "s", "n"}, {prim<int32_t>(PType::i32, {1}), strings({"x"}),
                                        strukt({"b"}, {prim<double>(PType::f64, {1.0})})});
  const DType& schema = *batch->dtype;
  auto err = bind_error("a = 1 AND zz > 2", schema);
  CHECK(err.code() == Errc::not_found);
  CHECK(err.message() ==
        "unknown column zz: the schema has fields a, s, n at column 11\n  a = 1 AND zz > 2\n"
        "            ^");
  err = bind_error("n.q = 1", schema);
  CHECK(err.code() == Errc::not_found);
  CHECK(err.message().starts_with("unknown column n.q: n has fields b at column 1"));
  err = bind_error("a.x = 1", schema);
  CHECK(err.code() == Errc::invalid);
  CHECK(err.message().starts_with("a is i32, not a struct"));
  err = bind_error("a > 3 AND a = 'x'", schema);
  CHECK(err.code() == Errc::invalid);
  CHECK(err.message().starts_with(
      "cannot compare column a (i32) with string literal 'x' at column 15"));
  err = bind_error("s < 3", schema);
  CHECK(err.message().starts_with(
      "cannot compare column s (utf8) with integer literal 3 at column 5"));
  CHECK(bind_error("s = TRUE", schema).code() == Errc::invalid);
  CHECK(bind_error("a = DATE '2024-01-01'", schema).code() == Errc::invalid);
  CHECK(bind_error("a IN (1, 'two')", schema).message().find("at column 10") != std::string::npos);
  CHECK(bind_error("a BETWEEN 1 AND 'z'", schema).code() == Errc::invalid);
  CHECK(bind_error("a LIKE 'x%'", schema).code() == Errc::invalid);
  err = bind_error("a", schema);
  CHECK(err.message().starts_with("column a (i32) is not a boolean condition at column 1"));
  CHECK(bind_error("3 OR a = 1", schema)
            .message()
            .starts_with("a integer literal is not a condition at column 1"));
  CHECK(bind_error("a = a", schema).code() == Errc::unsupported);
  CHECK(bind_error("1 = 1", schema).code() == Errc::unsupported);
  CHECK(bind_error("n = 1", schema).code() == Errc::unsupported);
  // Without the source text, errors still carry the column.
  auto e = parse_expr("a = 'x'");
  REQUIRE(e.ok());
  CHECK(format::bind(**e, schema).error().message() ==
        "cannot compare column a (i32) with string literal 'x' at column 5");
}

TEMPLATE_TEST_CASE("every integer width compares exactly with integer and float literals", "[expr]",
                   int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t) {
  constexpr PType kTypes[] = {PType::u8, PType::u16, PType::u32, PType::u64,
                              PType::i8, PType::i16, PType::i32, PType::i64};
  const PType p = kTypes[(std::is_signed_v<TestType> ? 4 : 0) + (sizeof(TestType) == 1   ? 0
                                                                 : sizeof(TestType) == 2 ? 1
                                                                 : sizeof(TestType) == 4 ? 2
                                                                                         : 3)];
  constexpr TestType kMax = std::numeric_limits<TestType>::max();
  auto batch =
      strukt({"x"}, {prim<TestType>(p, {1, 2, 3, 0, kMax}, {true, true, true, false, true})});
  CHECK(truth("x > 1", batch) == std::vector<Truth>{F, T, T, N, T});
  CHECK(truth("x = 2", batch) == std::vector<Truth>{F, T, F, N, F});
  CHECK(truth("x != 2", batch) == std::vector<Truth>{T, F, T, N, T});
  CHECK(truth("x <= 2", batch) == std::vector<Truth>{T, T, F, N, F});
  CHECK(truth("2 >= x", batch) == std::vector<Truth>{T, T, F, N, F});
  CHECK(truth("x < 2.5", batch) == std::vector<Truth>{T, T, F, N, F});
  CHECK(truth("x > -1", batch) == std::vector<Truth>{T, T, T, N, T});
  CHECK(
      truth("x < 18446744073709551615", batch) ==
      std::vector<Truth>{T, T, T, N, sizeof(TestType) == 8 && !std::is_signed_v<TestType> ? F : T});
  CHECK(truth(fmt::format("x = {}", uint64_t{kMax}), batch) == std::vector<Truth>{F, F, F, N, T});
  CHECK(truth("x IN (1, 3)", batch) == std::vector<Truth>{T, F, T, N, F});
  CHECK(truth("x IN (1, NULL)", batch) == std::vector<Truth>{T, N, N, N, N});
  CHECK(truth("x BETWEEN 2 AND 3", batch) == std::vector<Truth>{F, T, T, N, F});
  CHECK(truth("x IS NULL", batch) == std::vector<Truth>{F, F, F, T, F});
  CHECK(truth("x IS NOT NULL", batch) == std::vector<Truth>{T, T, T, F, T});
  CHECK(truth("x = NULL", batch) == std::vector<Truth>{N, N, N, N, N});
}

TEST_CASE("negative values and signed/unsigned mixes compare by value", "[expr]") {
  auto batch =
      strukt({"i", "u"}, {prim<int64_t>(PType::i64, {-5, 0, std::numeric_limits<int64_t>::min()}),
                          prim<uint64_t>(PType::u64, {0, 9'223'372'036'854'775'808u, 7})});
  CHECK(truth("i < 0", batch) == std::vector<Truth>{T, F, T});
  CHECK(truth("i = -9223372036854775808", batch) == std::vector<Truth>{F, F, T});
  CHECK(truth("i < 18446744073709551615", batch) == std::vector<Truth>{T, T, T});
  CHECK(truth("u > -1", batch) == std::vector<Truth>{T, T, T});
  CHECK(truth("u > 9223372036854775807", batch) == std::vector<Truth>{F, T, F});
}

TEST_CASE("floats follow IEEE 754: NaN is unequal and unordered, -0.0 equals 0.0", "[expr]") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  auto batch = strukt({"d", "f"},
                      {prim<double>(PType::f64, {1.0, nan, -0.0, 4.0}, {true, true, true, false}),
                       prim<float>(PType::f32, {1.0f, std::nanf(""), -0.0f, 2.5f})});
  CHECK(truth("d = 1", batch) == std::vector<Truth>{T, F, F, N});
  CHECK(truth("d != 1.0", batch) == std::vector<Truth>{F, T, T, N});
  CHECK(truth("d < 2", batch) == std::vector<Truth>{T, F, T, N});
  CHECK(truth("d >= 1", batch) == std::vector<Truth>{T, F, F, N});
  CHECK(truth("d = 0", batch) == std::vector<Truth>{F, F, T, N});
  CHECK(truth("d IN (1, 0)", batch) == std::vector<Truth>{T, F, T, N});
  CHECK(truth("f > 1.0", batch) == std::vector<Truth>{F, F, F, T});
  CHECK(truth("f != 2.5", batch) == std::vector<Truth>{T, T, T, F});
  CHECK(truth("f BETWEEN -1 AND 1", batch) == std::vector<Truth>{T, F, T, F});
}

TEST_CASE("strings and binary compare bytewise; LIKE matches prefixes and exact text", "[expr]") {
  for (bool binary : {false, true}) {
    auto batch = strukt({"s"}, {strings({"apple", "banana", "", "x", "app", "\xff"},
                                        {true, true, true, false, true, true}, binary)});
    CHECK(truth("s LIKE 'app%'", batch) == std::vector<Truth>{T, F, F, N, T, F});
    CHECK(truth("s LIKE 'app'", batch) == std::vector<Truth>{F, F, F, N, T, F});
    CHECK(truth("s LIKE '%'", batch) == std::vector<Truth>{T, T, T, N, T, T});
    CHECK(truth("NOT s LIKE 'app%'", batch) == std::vector<Truth>{F, T, T, N, F, T});
    CHECK(truth("s = 'banana'", batch) == std::vector<Truth>{F, T, F, N, F, F});
    CHECK(truth("s < 'b'", batch) == std::vector<Truth>{T, F, T, N, T, F});
    CHECK(truth("s > 'z'", batch) == std::vector<Truth>{F, F, F, N, F, T});
    CHECK(truth("s IN ('', 'app')", batch) == std::vector<Truth>{F, F, T, N, T, F});
    CHECK(truth("s BETWEEN 'a' AND 'b'", batch) == std::vector<Truth>{T, F, F, N, T, F});
  }
}

TEST_CASE("Kleene logic: AND, OR and NOT over TRUE, FALSE and NULL", "[expr]") {
  // Rows: every (p, q) pair of {TRUE, FALSE, NULL}.
  auto batch =
      strukt({"p", "q"}, {bools({1, 1, 1, 0, 0, 0, 0, 0, 0}, {1, 1, 1, 1, 1, 1, 0, 0, 0}),
                          bools({1, 0, 0, 1, 0, 0, 1, 0, 0}, {1, 1, 0, 1, 1, 0, 1, 1, 0})});
  CHECK(truth("p", batch) == std::vector<Truth>{T, T, T, F, F, F, N, N, N});
  CHECK(truth("q", batch) == std::vector<Truth>{T, F, N, T, F, N, T, F, N});
  CHECK(truth("p AND q", batch) == std::vector<Truth>{T, F, N, F, F, F, N, F, N});
  CHECK(truth("p OR q", batch) == std::vector<Truth>{T, T, T, T, F, N, T, N, N});
  CHECK(truth("NOT p", batch) == std::vector<Truth>{F, F, F, T, T, T, N, N, N});
  CHECK(truth("p = TRUE", batch) == std::vector<Truth>{T, T, T, F, F, F, N, N, N});
  CHECK(truth("p IS NULL OR q IS NULL", batch) == std::vector<Truth>{F, F, T, F, F, T, T, T, T});
  auto one = strukt({"p"}, {bools({true})});
  CHECK(truth("NULL AND FALSE", one) == std::vector<Truth>{F});
  CHECK(truth("NULL AND TRUE", one) == std::vector<Truth>{N});
  CHECK(truth("NULL OR TRUE", one) == std::vector<Truth>{T});
  CHECK(truth("NULL OR FALSE", one) == std::vector<Truth>{N});
  CHECK(truth("NOT NULL", one) == std::vector<Truth>{N});
  CHECK(truth("NULL IS NULL AND 1 IS NOT NULL", one) == std::vector<Truth>{T});
  // The filter keeps only TRUE rows.
  auto e = parse_expr("p OR q");
  REQUIRE(e.ok());
  auto b = format::bind(**e, *batch->dtype);
  REQUIRE(b.ok());
  auto m = evaluate(*b, *batch);
  REQUIRE(m.ok());
  CHECK(m->keep == std::vector<uint8_t>{1, 1, 1, 1, 0, 0, 1, 0, 0});
  CHECK(m->count == 5);
}

TEST_CASE("nested fields are null where any enclosing struct is null", "[expr]") {
  auto inner =
      strukt({"b", "c"}, {prim<int32_t>(PType::i32, {5, 5, 6, 7}), strings({"x", "y", "z", "w"})},
             {true, false, true, true});
  auto batch = strukt({"a", "k"}, {inner, prim<int32_t>(PType::i32, {1, 2, 3, 4})},
                      {true, true, true, false});
  CHECK(truth("a.b = 5", batch) == std::vector<Truth>{T, N, F, N});
  CHECK(truth("a.b IS NULL", batch) == std::vector<Truth>{F, T, F, T});
  CHECK(truth("a IS NOT NULL", batch) == std::vector<Truth>{T, F, T, F});
  CHECK(truth("a.c LIKE 'z%' OR k = 1", batch) == std::vector<Truth>{T, N, T, N});
  // A sliced batch reads its children through its offset.
  auto sliced = slice(batch, 1, 3);
  CHECK(truth("a.b >= 6", sliced) == std::vector<Truth>{N, T, N});
}

TEST_CASE("date and timestamp columns compare on storage, exactly, in their unit", "[expr]") {
  using oc::test::nested_golden::make_temporal;
  auto date = make_temporal("vortex.date", TimeUnit::days, PType::i32, true);
  auto ts_s = make_temporal("vortex.timestamp", TimeUnit::s, PType::i64, false);
  auto ts_ns = make_temporal("vortex.timestamp", TimeUnit::ns, PType::i64, false, "UTC");
  auto ts_ms = make_temporal("vortex.timestamp", TimeUnit::ms, PType::i64, false);
  // 2024-01-31 is day 19753; 2024-01-31 00:00:00 is second 1706659200.
  auto batch = strukt(
      {"d", "s", "ns", "ms"},
      {prim<int32_t>(PType::i32, {19752, 19753, 19754, 0}, {true, true, true, false}, date),
       prim<int64_t>(PType::i64, {1706659199, 1706659200, 1706659201, -1}, {}, ts_s),
       prim<int64_t>(PType::i64,
                     {1706659200'000'000'000, 1706659200'000'000'500, 1706659200'000'001'000, -1},
                     {}, ts_ns),
       prim<int64_t>(PType::i64, {1706659200'000, 1706659200'500, 1706659201'000, -1}, {}, ts_ms)});
  CHECK(truth("d = DATE '2024-01-31'", batch) == std::vector<Truth>{F, T, F, N});
  CHECK(truth("d > DATE '2024-01-31'", batch) == std::vector<Truth>{F, F, T, N});
  CHECK(truth("d BETWEEN DATE '2024-01-30' AND DATE '2024-01-31'", batch) ==
        std::vector<Truth>{T, T, F, N});
  CHECK(truth("d >= TIMESTAMP '2024-01-31 00:00:01'", batch) == std::vector<Truth>{F, F, T, N});
  CHECK(truth("s = DATE '2024-01-31'", batch) == std::vector<Truth>{F, T, F, F});
  CHECK(truth("s >= TIMESTAMP '2024-01-31 00:00:00.5'", batch) == std::vector<Truth>{F, F, T, F});
  CHECK(truth("s < TIMESTAMP '2024-01-31 00:00:00.5'", batch) == std::vector<Truth>{T, T, F, T});
  CHECK(truth("s = TIMESTAMP '1969-12-31 23:59:59'", batch) == std::vector<Truth>{F, F, F, T});
  CHECK(truth("ns = TIMESTAMP '2024-01-31 00:00:00'", batch) == std::vector<Truth>{T, F, F, F});
  CHECK(truth("ns > TIMESTAMP '2024-01-31 00:00:00'", batch) == std::vector<Truth>{F, T, T, F});
  CHECK(truth("ns <= TIMESTAMP '2024-01-31 00:00:00.000001'", batch) ==
        std::vector<Truth>{T, T, T, T});
  CHECK(truth("ms IN (TIMESTAMP '2024-01-31 00:00:00.5', DATE '1970-01-01')", batch) ==
        std::vector<Truth>{F, T, F, F});
  // Dates compare in their own i32: the extremes of i32, an instant between two days (equal to
  // none), instants before and after every day a date can hold.
  auto edges = strukt({"d"}, {prim<int32_t>(PType::i32, {INT32_MIN, -1, 0, 19753, INT32_MAX, 0},
                                            {true, true, true, true, true, false}, date)});
  CHECK(truth("d = TIMESTAMP '2024-01-31 00:00:01'", edges) ==
        std::vector<Truth>{F, F, F, F, F, N});
  CHECK(truth("d <> TIMESTAMP '2024-01-31 00:00:01'", edges) ==
        std::vector<Truth>{T, T, T, T, T, N});
  CHECK(truth("d < TIMESTAMP '2024-01-31 00:00:01'", edges) ==
        std::vector<Truth>{T, T, T, T, F, N});
  CHECK(truth("d >= TIMESTAMP '2024-01-31 00:00:01'", edges) ==
        std::vector<Truth>{F, F, F, F, T, N});
  CHECK(truth("d <= DATE '1969-12-31'", edges) == std::vector<Truth>{T, T, F, F, F, N});
  CHECK(truth("d > DATE '1970-01-01'", edges) == std::vector<Truth>{F, F, F, T, T, N});
  CHECK(truth("d < TIMESTAMP '9999-12-31 23:59:59'", edges) ==
        std::vector<Truth>{T, T, T, T, F, N});
  CHECK(truth("d > TIMESTAMP '0001-01-01 00:00:00'", edges) ==
        std::vector<Truth>{F, T, T, T, T, N});

  // A column in seconds stored as i32 against instants past both ends of i32 seconds (years
  // 1901 and 2038): every valid row gets the same answer, nulls stay null.
  auto secs32 = make_temporal("vortex.timestamp", TimeUnit::s, PType::i32, true);
  auto narrow = strukt({"t"}, {prim<int32_t>(PType::i32, {INT32_MIN, 0, INT32_MAX, 0},
                                             {true, true, true, false}, secs32)});
  CHECK(truth("t < TIMESTAMP '2100-01-01 00:00:00'", narrow) == std::vector<Truth>{T, T, T, N});
  CHECK(truth("t <= TIMESTAMP '2100-01-01 00:00:00'", narrow) == std::vector<Truth>{T, T, T, N});
  CHECK(truth("t > TIMESTAMP '2100-01-01 00:00:00'", narrow) == std::vector<Truth>{F, F, F, N});
  CHECK(truth("t >= TIMESTAMP '2100-01-01 00:00:00'", narrow) == std::vector<Truth>{F, F, F, N});
  CHECK(truth("t = TIMESTAMP '2100-01-01 00:00:00'", narrow) == std::vector<Truth>{F, F, F, N});
  CHECK(truth("t <> TIMESTAMP '2100-01-01 00:00:00'", narrow) == std::vector<Truth>{T, T, T, N});
  CHECK(truth("t < TIMESTAMP '1800-01-01 00:00:00'", narrow) == std::vector<Truth>{F, F, F, N});
  CHECK(truth("t >= TIMESTAMP '1800-01-01 00:00:00'", narrow) == std::vector<Truth>{T, T, T, N});
  CHECK(truth("t > TIMESTAMP '1800-01-01 00:00:00'", narrow) == std::vector<Truth>{T, T, T, N});
  CHECK(truth("t <= TIMESTAMP '1800-01-01 00:00:00'", narrow) == std::vector<Truth>{F, F, F, N});

  // A batch carrying only the storage type still compares as the bound timestamp.
  auto schema = strukt({"s"}, {prim<int64_t>(PType::i64, {0}, {}, ts_s)});
  auto e = parse_expr("s = DATE '2024-01-31'");
  REQUIRE(e.ok());
  auto b = format::bind(**e, *schema->dtype);
  REQUIRE(b.ok());
  auto plain = strukt({"s"}, {prim<int64_t>(PType::i64, {1706659200, 19753})});
  auto t = evaluate_truth(*b, *plain);
  REQUIRE(t.ok());
  CHECK(*t == std::vector<Truth>{T, F});
}

TEST_CASE(
    "string literals next to date and timestamp columns read as DuckDB and PostgreSQL read them",
    "[expr]") {
  using oc::test::nested_golden::make_temporal;
  auto date = make_temporal("vortex.date", TimeUnit::days, PType::i32, true);
  auto ts_s = make_temporal("vortex.timestamp", TimeUnit::s, PType::i64, false);
  auto batch =
      strukt({"ship", "ts"},
             {prim<int32_t>(PType::i32, {8765, 8766, 9130, 9131, 0},
                            {true, true, true, true, false}, date),
              prim<int64_t>(PType::i64, {1714564799, 1714564800, 1714564801, 0, 1}, {}, ts_s)});
  // 1994-01-01 is day 8766, 1994-12-31 day 9130; 2024-05-01 12:00:00 is second 1714564800.
  const std::pair<const char*, const char*> same[] = {
      {"ship BETWEEN '1994-01-01' AND '1994-12-31'",
       "ship BETWEEN DATE '1994-01-01' AND DATE '1994-12-31'"},
      {"ship >= '1994-01-01'", "ship >= DATE '1994-01-01'"},
      {"'1994-12-31' >= ship", "DATE '1994-12-31' >= ship"},
      {"ship IN ('1994-01-01', '1994-12-31')", "ship IN (DATE '1994-01-01', DATE '1994-12-31')"},
      {"ts > '2024-05-01 12:00:00'", "ts > TIMESTAMP '2024-05-01 12:00:00'"},
      {"ts <= '2024-05-01 12:00:00.5'", "ts <= TIMESTAMP '2024-05-01 12:00:00.5'"},
      {"ts >= '2024-05-01'", "ts >= DATE '2024-05-01'"},
  };
  for (auto [text, typed] : same) {
    INFO(text);
    CHECK(truth(text, batch) == truth(typed, batch));
  }
  CHECK(truth("ship BETWEEN '1994-01-01' AND '1994-12-31'", batch) ==
        std::vector<Truth>{F, T, T, F, N});
  CHECK(truth("ts > '2024-05-01 12:00:00'", batch) == std::vector<Truth>{F, F, T, F, F});
  // Text that is no date or timestamp is an error pointing at it; strings still compare with
  // strings only.
  const DType& schema = *batch->dtype;
  auto err = bind_error("ship > '1994-13-01'", schema);
  CHECK(err.code() == Errc::invalid);
  CHECK(err.message().starts_with("cannot read '1994-13-01' as a "));
  CHECK(err.message().find("expected 'YYYY-MM-DD' or 'YYYY-MM-DD HH:MM:SS[.ffffff]' at column 8") !=
        std::string::npos);
  CHECK(bind_error("ts = 'yesterday'", schema).code() == Errc::invalid);
  CHECK(bind_error("ts = '2024-05-01T12:00:00'", schema).code() == Errc::invalid);
}

TEST_CASE("filter_rows keeps the rows the mask selects", "[expr]") {
  auto batch =
      strukt({"x", "s"}, {prim<int32_t>(PType::i32, {1, 2, 3, 4}, {true, false, true, true}),
                          strings({"a", "b", "c", "d"})});
  auto e = parse_expr("x >= 3 OR s = 'a'");
  REQUIRE(e.ok());
  auto b = format::bind(**e, *batch->dtype);
  REQUIRE(b.ok());
  auto m = evaluate(*b, *batch);
  REQUIRE(m.ok());
  auto kept = filter_rows(batch, *m);
  REQUIRE(kept.ok());
  REQUIRE((*kept)->length == 3);
  CHECK(oc::test::strings_of(*(*kept)->children[1]) == std::vector<std::string>{"a", "c", "d"});
  Mask short_mask;
  short_mask.keep = {1};
  CHECK(filter_rows(batch, short_mask).error().code() == Errc::invalid);
}

TEST_CASE("evaluation rejects batches that do not match the bound schema", "[expr]") {
  auto batch = strukt({"x"}, {prim<int32_t>(PType::i32, {1, 2})});
  auto other = strukt({"x"}, {strings({"a", "b"})});
  auto e = parse_expr("x = 1");
  REQUIRE(e.ok());
  auto b = format::bind(**e, *batch->dtype);
  REQUIRE(b.ok());
  CHECK(evaluate(*b, *other).error().code() == Errc::invalid);
  CHECK(evaluate(*b, *strukt({}, {})).error().code() == Errc::invalid);  // no field x
  auto none = evaluate(*b, *strukt({"x"}, {prim<int32_t>(PType::i32, {})}));
  REQUIRE(none.ok());
  CHECK(none->keep.empty());
}

TEST_CASE("kept_rows lists the kept rows at every density, skipping empty words", "[expr]") {
  std::mt19937_64 rng(5);
  for (const uint64_t n : {0u, 1u, 7u, 8u, 9u, 63u, 64u, 1000u, 4099u}) {
    for (const unsigned one_in : {1u, 2u, 9u, 100u, 100000u}) {
      format::Mask mask;
      mask.keep.resize(n);
      std::vector<uint64_t> want;
      for (uint64_t r = 0; r < n; ++r) {
        mask.keep[r] =
            rng() % one_in == 0 ? static_cast<uint8_t>(1 + rng() % 3) : 0;  // any non-zero keeps
        if (mask.keep[r]) want.push_back(r + 17);
      }
      INFO(n << " rows, one in " << one_in);
      CHECK(format::kept_rows(mask, 17) == want);
    }
  }
}
