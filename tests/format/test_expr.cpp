// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "config/defaults.hpp"
#include "format/expr_parser.hpp"

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
  for (const std::string sql : {
           "a = 1", "a != 1", "a < 1", "a <= 1", "a > 1", "a >= 1", "a.b.c = 'x'",
           "\"weird name\".x = 'it''s'", "\"a\"\"b\" = 1", "\"date\" = 1", "a IS NULL",
           "a IS NOT NULL", "a IN (1, 2, 3)", "a BETWEEN 1 AND 10", "a LIKE 'pre%'",
           "a LIKE 'exact'", "NOT a", "a = TRUE", "a = FALSE", "a = NULL", "a = -5",
           "a = 18446744073709551615", "a = -9223372036854775808", "a = 1.5", "a = 1e+20",
           "a = -0.25", "a = DATE '2024-01-31'", "a = DATE '1969-12-31'",
           "a = TIMESTAMP '2024-01-31 12:34:56'", "a = TIMESTAMP '2024-01-31 12:34:56.000001'",
           "a = TIMESTAMP '1969-12-31 23:59:59.5'", "a = 1 AND b = 2 AND c = 3",
           "a = 1 OR b = 2 OR c = 3", "NOT a IN (1, 2)", "NOT a BETWEEN 1 AND 2",
           "NOT a LIKE 'x%'", "(NOT a) = TRUE"}) {
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
  CHECK(round_trip("x is not null and y between 1 and 2") ==
        "x IS NOT NULL AND y BETWEEN 1 AND 2");
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
  CHECK(parse_error("a = DATE '2023-02-29'").starts_with(
      "invalid DATE '2023-02-29': expected 'YYYY-MM-DD' at column 10"));
  CHECK(parse_error("a = TIMESTAMP '2024-01-31 24:00:00'").find("at column 15") !=
        std::string::npos);
  CHECK(parse_error("a LIKE '%x'", Errc::unsupported)
            .starts_with("unsupported LIKE pattern '%x': only exact matches and 'prefix%'"));
  CHECK(parse_error("a LIKE 'a_c'", Errc::unsupported).find("at column 8") != std::string::npos);
  CHECK(parse_error("a LIKE b").starts_with("unexpected 'b' at column 8"));
  CHECK(parse_error("a = 99999999999999999999").starts_with(
      "integer literal out of range at column 5"));
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
