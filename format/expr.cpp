// SPDX-License-Identifier: Apache-2.0
#include "format/expr.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>

namespace oc::format {

Literal Literal::null_value() { return Literal{}; }
Literal Literal::boolean(bool v) {
  Literal l;
  l.kind = Kind::boolean;
  l.b = v;
  return l;
}
Literal Literal::int64(int64_t v) {
  Literal l;
  l.kind = Kind::int64;
  l.i = v;
  return l;
}
Literal Literal::uint64(uint64_t v) {
  Literal l;
  l.kind = Kind::uint64;
  l.u = v;
  return l;
}
Literal Literal::float64(double v) {
  Literal l;
  l.kind = Kind::float64;
  l.f = v;
  return l;
}
Literal Literal::string(std::string v) {
  Literal l;
  l.kind = Kind::string;
  l.s = std::move(v);
  return l;
}
Literal Literal::date(int64_t days) {
  Literal l;
  l.kind = Kind::date;
  l.i = days;
  return l;
}
Literal Literal::timestamp(int64_t micros) {
  Literal l;
  l.kind = Kind::timestamp;
  l.i = micros;
  return l;
}

// Howard Hinnant's civil-calendar algorithms (public domain, "chrono-Compatible Low-Level Date
// Algorithms"): eras of 400 years make the leap-year rule a closed form.
int64_t days_from_civil(int64_t y, unsigned m, unsigned d) noexcept {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

namespace {

struct Civil {
  int64_t y;
  unsigned m, d;
};

Civil civil_from_days(int64_t z) noexcept {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const auto doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  const unsigned d = doy - (153 * mp + 2) / 5 + 1;
  const unsigned m = mp < 10 ? mp + 3 : mp - 9;
  return {static_cast<int64_t>(yoe) + era * 400 + (m <= 2), m, d};
}

// Floor division: timestamps before 1970 still land on the right day.
int64_t floor_div(int64_t a, int64_t b) noexcept {
  return a / b - ((a % b != 0) && ((a < 0) != (b < 0)));
}

std::string quote(std::string_view s, char q) {
  std::string out(1, q);
  for (char c : s) {
    out += c;
    if (c == q) out += q;
  }
  out += q;
  return out;
}

bool is_plain_identifier(std::string_view s) noexcept {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return !is_keyword(s);
}

// Binding strength for printing: a child whose precedence is below what its parent position
// requires gets parentheses. Predicates (compare, IS NULL, IN, ...) take atoms as operands.
enum Prec : int { kOr = 1, kAnd = 2, kNot = 3, kPredicate = 4, kAtom = 5 };

int precedence(const Expr& e) noexcept {
  switch (e.kind) {
    case ExprKind::or_:
      return kOr;
    case ExprKind::and_:
      return kAnd;
    case ExprKind::not_:
      return kNot;
    case ExprKind::column:
    case ExprKind::literal:
      return kAtom;
    default:
      return kPredicate;
  }
}

void print(const Expr& e, std::string& out);

void print_child(const Expr& e, int min_prec, std::string& out) {
  const bool parens = precedence(e) < min_prec;
  if (parens) out += '(';
  print(e, out);
  if (parens) out += ')';
}

void print(const Expr& e, std::string& out) {
  const auto& c = e.children;
  switch (e.kind) {
    case ExprKind::column:
      out += path_to_string(e.path);
      return;
    case ExprKind::literal:
      out += literal_to_string(e.literal);
      return;
    case ExprKind::compare:
      print_child(*c[0], kAtom, out);
      fmt::format_to(std::back_inserter(out), " {} ", cmp_op_name(e.op));
      print_child(*c[1], kAtom, out);
      return;
    case ExprKind::and_:
    case ExprKind::or_: {
      // Flattened n-ary: a nested node of the same kind came from explicit parentheses, so it
      // must print with them (kAnd + 1) to parse back into the same shape.
      const int p = precedence(e);
      for (size_t i = 0; i < c.size(); ++i) {
        if (i) out += e.kind == ExprKind::and_ ? " AND " : " OR ";
        print_child(*c[i], p + 1, out);
      }
      return;
    }
    case ExprKind::not_:
      out += "NOT ";
      print_child(*c[0], kNot, out);
      return;
    case ExprKind::is_null:
      print_child(*c[0], kAtom, out);
      out += e.negated ? " IS NOT NULL" : " IS NULL";
      return;
    case ExprKind::in_list:
      print_child(*c[0], kAtom, out);
      out += " IN (";
      for (size_t i = 1; i < c.size(); ++i) {
        if (i > 1) out += ", ";
        print_child(*c[i], kAtom, out);
      }
      out += ')';
      return;
    case ExprKind::between:
      print_child(*c[0], kAtom, out);
      out += " BETWEEN ";
      print_child(*c[1], kAtom, out);
      out += " AND ";
      print_child(*c[2], kAtom, out);
      return;
    case ExprKind::like:
      print_child(*c[0], kAtom, out);
      out += " LIKE ";
      print_child(*c[1], kAtom, out);
      return;
  }
}

}  // namespace

std::string date_to_string(int64_t days) {
  const Civil c = civil_from_days(days);
  return fmt::format("{:04}-{:02}-{:02}", c.y, c.m, c.d);
}

std::string literal_to_string(const Literal& l) {
  switch (l.kind) {
    case Literal::Kind::null:
      return "NULL";
    case Literal::Kind::boolean:
      return l.b ? "TRUE" : "FALSE";
    case Literal::Kind::int64:
      return fmt::format("{}", l.i);
    case Literal::Kind::uint64:
      return fmt::format("{}", l.u);
    case Literal::Kind::float64: {
      std::string s = fmt::format("{}", l.f);
      if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
      return s;
    }
    case Literal::Kind::string:
      return quote(l.s, '\'');
    case Literal::Kind::date:
      return "DATE '" + date_to_string(l.i) + "'";
    case Literal::Kind::timestamp: {
      constexpr int64_t kMicrosPerDay = 86'400'000'000;
      const int64_t days = floor_div(l.i, kMicrosPerDay);
      const int64_t us = l.i - days * kMicrosPerDay;
      std::string s = fmt::format("TIMESTAMP '{} {:02}:{:02}:{:02}", date_to_string(days),
                                  us / 3'600'000'000, us / 60'000'000 % 60, us / 1'000'000 % 60);
      if (us % 1'000'000) s += fmt::format(".{:06}", us % 1'000'000);
      return s + "'";
    }
  }
  return {};
}

std::string_view cmp_op_name(CmpOp op) noexcept {
  constexpr std::array<std::string_view, 6> kNames = {"=", "!=", "<", "<=", ">", ">="};
  return kNames[static_cast<size_t>(op)];
}

ExprPtr Expr::column(std::vector<std::string> path, uint32_t pos) {
  auto e = std::make_shared<Expr>();
  e->kind = ExprKind::column;
  e->path = std::move(path);
  e->pos = pos;
  return e;
}
ExprPtr Expr::lit(Literal l, uint32_t pos) {
  auto e = std::make_shared<Expr>();
  e->kind = ExprKind::literal;
  e->literal = std::move(l);
  e->pos = pos;
  return e;
}
ExprPtr Expr::make(ExprKind kind, std::vector<ExprPtr> children, uint32_t pos) {
  auto e = std::make_shared<Expr>();
  e->kind = kind;
  e->children = std::move(children);
  e->pos = pos;
  return e;
}
ExprPtr Expr::compare(CmpOp op, ExprPtr l, ExprPtr r, uint32_t pos) {
  auto e = std::make_shared<Expr>();
  e->kind = ExprKind::compare;
  e->op = op;
  e->children = {std::move(l), std::move(r)};
  e->pos = pos;
  return e;
}
ExprPtr Expr::is_null(ExprPtr x, bool negated, uint32_t pos) {
  auto e = std::make_shared<Expr>();
  e->kind = ExprKind::is_null;
  e->negated = negated;
  e->children = {std::move(x)};
  e->pos = pos;
  return e;
}

std::string path_to_string(const std::vector<std::string>& path) {
  std::string out;
  for (size_t i = 0; i < path.size(); ++i) {
    if (i) out += '.';
    out += is_plain_identifier(path[i]) ? path[i] : quote(path[i], '"');
  }
  return out;
}

std::string to_string(const Expr& e) {
  std::string out;
  print(e, out);
  return out;
}

std::string point_at(std::string_view source, uint32_t pos) {
  std::string line(source);
  for (char& c : line) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  }
  return fmt::format(" at column {}\n  {}\n  {}^", pos + 1, line, std::string(pos, ' '));
}

bool is_keyword(std::string_view word) noexcept {
  constexpr std::array<std::string_view, 12> kKeywords = {"AND",  "OR",    "NOT",     "IS",
                                                          "NULL", "IN",    "BETWEEN", "LIKE",
                                                          "TRUE", "FALSE", "DATE",    "TIMESTAMP"};
  auto upper_eq = [&](std::string_view k) {
    if (k.size() != word.size()) return false;
    return std::equal(k.begin(), k.end(), word.begin(), [](char a, char w) {
      return std::toupper(static_cast<unsigned char>(w)) == a;
    });
  };
  for (auto k : kKeywords) {
    if (upper_eq(k)) return true;
  }
  return false;
}

}  // namespace oc::format
