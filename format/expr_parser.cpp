// SPDX-License-Identifier: Apache-2.0
#include "format/expr_parser.hpp"

#include <array>
#include <cctype>
#include <charconv>
#include <limits>
#include <string>
#include <vector>

#include "config/defaults.hpp"

namespace oc::format {
namespace {

enum class Tok : uint8_t {
  end,
  name,
  quoted_name,
  integer,
  floating,
  string,
  lparen,
  rparen,
  comma,
  dot,
  minus,
  cmp
};

struct Token {
  Tok kind = Tok::end;
  uint32_t pos = 0;  ///< byte offset of the first character
  uint32_t end = 0;  ///< byte offset past the last character
  std::string text;  ///< names, numbers; strings and quoted names without quotes and escapes
  CmpOp op = CmpOp::eq;
};

bool is_name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

bool keyword_eq(const Token& t, std::string_view upper) {
  if (t.kind != Tok::name || t.text.size() != upper.size()) return false;
  for (size_t i = 0; i < upper.size(); ++i) {
    if (std::toupper(static_cast<unsigned char>(t.text[i])) != upper[i]) return false;
  }
  return true;
}

class Lexer {
 public:
  explicit Lexer(std::string_view src) : src_(src) {}

  Result<std::vector<Token>> run() {
    std::vector<Token> out;
    while (true) {
      while (i_ < src_.size() && std::isspace(static_cast<unsigned char>(src_[i_]))) ++i_;
      Token t;
      t.pos = static_cast<uint32_t>(i_);
      if (i_ == src_.size()) {
        t.end = t.pos;
        out.push_back(std::move(t));
        return out;
      }
      OC_TRY(next(t));
      t.end = static_cast<uint32_t>(i_);
      out.push_back(std::move(t));
    }
  }

 private:
  [[nodiscard]] Error error(size_t pos, std::string msg) const {
    return OC_ERROR(Errc::invalid, "{}{}", msg, point_at(src_, static_cast<uint32_t>(pos)));
  }

  // Reads a quoted run whose quote character doubles as its own escape ('it''s', "a""b").
  Result<void> quoted(Token& t, char q, const char* what) {
    const size_t start = i_++;
    while (true) {
      if (i_ >= src_.size()) return error(start, fmt::format("unterminated {}", what));
      const char c = src_[i_++];
      if (c != q) {
        t.text += c;
      } else if (i_ < src_.size() && src_[i_] == q) {
        t.text += q;
        ++i_;
      } else {
        return {};
      }
    }
  }

  Result<void> number(Token& t) {
    const size_t start = i_;
    while (i_ < src_.size() && is_digit(src_[i_])) ++i_;
    t.kind = Tok::integer;
    if (i_ + 1 < src_.size() && src_[i_] == '.' && is_digit(src_[i_ + 1])) {
      t.kind = Tok::floating;
      for (++i_; i_ < src_.size() && is_digit(src_[i_]);) ++i_;
    }
    if (i_ < src_.size() && (src_[i_] == 'e' || src_[i_] == 'E')) {
      size_t j = i_ + 1;
      if (j < src_.size() && (src_[j] == '+' || src_[j] == '-')) ++j;
      if (j >= src_.size() || !is_digit(src_[j])) return error(i_, "malformed exponent");
      t.kind = Tok::floating;
      for (i_ = j; i_ < src_.size() && is_digit(src_[i_]);) ++i_;
    }
    // "12abc" is one bad token, not a number followed by a name.
    if (i_ < src_.size() && is_name_char(src_[i_])) return error(i_, "malformed number");
    t.text.assign(src_.substr(start, i_ - start));
    return {};
  }

  Result<void> next(Token& t) {
    const char c = src_[i_];
    const char n = i_ + 1 < src_.size() ? src_[i_ + 1] : '\0';
    if (is_name_start(c)) {
      const size_t start = i_;
      while (i_ < src_.size() && is_name_char(src_[i_])) ++i_;
      t.kind = Tok::name;
      t.text.assign(src_.substr(start, i_ - start));
      return {};
    }
    if (is_digit(c)) return number(t);
    if (c == '\'') {
      t.kind = Tok::string;
      return quoted(t, '\'', "string");
    }
    if (c == '"') {
      t.kind = Tok::quoted_name;
      OC_TRY(quoted(t, '"', "quoted identifier"));
      if (t.text.empty()) return error(t.pos, "empty quoted identifier");
      return {};
    }
    auto cmp = [&](CmpOp op, size_t len) {
      t.kind = Tok::cmp;
      t.op = op;
      i_ += len;
      return Result<void>();
    };
    switch (c) {
      case '(':
        t.kind = Tok::lparen;
        break;
      case ')':
        t.kind = Tok::rparen;
        break;
      case ',':
        t.kind = Tok::comma;
        break;
      case '.':
        t.kind = Tok::dot;
        break;
      case '-':
        t.kind = Tok::minus;
        break;
      case '=':
        return cmp(CmpOp::eq, 1);
      case '!':
        if (n == '=') return cmp(CmpOp::ne, 2);
        return error(i_, "unexpected character '!'");
      case '<':
        if (n == '=') return cmp(CmpOp::le, 2);
        if (n == '>') return cmp(CmpOp::ne, 2);
        return cmp(CmpOp::lt, 1);
      case '>':
        if (n == '=') return cmp(CmpOp::ge, 2);
        return cmp(CmpOp::gt, 1);
      default:
        if (std::isprint(static_cast<unsigned char>(c))) {
          return error(i_, fmt::format("unexpected character '{}'", c));
        }
        return error(i_, fmt::format("unexpected byte 0x{:02x}", static_cast<uint8_t>(c)));
    }
    ++i_;
    return {};
  }

  std::string_view src_;
  size_t i_ = 0;
};

// Parses exactly N digits at s[at] into v; false when any is not a digit.
bool digits(std::string_view s, size_t at, size_t n, unsigned& v) {
  if (at + n > s.size()) return false;
  v = 0;
  for (size_t k = at; k < at + n; ++k) {
    if (!is_digit(s[k])) return false;
    v = v * 10 + static_cast<unsigned>(s[k] - '0');
  }
  return true;
}

// YYYY-MM-DD at the start of s, validated against the Gregorian calendar.
bool parse_date_prefix(std::string_view s, int64_t& days) {
  unsigned y = 0, m = 0, d = 0;
  if (!digits(s, 0, 4, y) || s.size() < 10 || s[4] != '-' || !digits(s, 5, 2, m) || s[7] != '-' ||
      !digits(s, 8, 2, d)) {
    return false;
  }
  constexpr std::array<unsigned, 12> kDays = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  if (m < 1 || m > 12 || d < 1 || d > kDays[m - 1] + (m == 2 && leap)) return false;
  days = days_from_civil(y, m, d);
  return true;
}

// 'YYYY-MM-DD HH:MM:SS[.f{1,6}]' as microseconds since the epoch, read as UTC.
bool parse_timestamp(std::string_view s, int64_t& micros) {
  int64_t days = 0;
  unsigned h = 0, mi = 0, sec = 0;
  if (!parse_date_prefix(s, days) || s.size() < 19 || s[10] != ' ' || !digits(s, 11, 2, h) ||
      s[13] != ':' || !digits(s, 14, 2, mi) || s[16] != ':' || !digits(s, 17, 2, sec) || h > 23 ||
      mi > 59 || sec > 59) {
    return false;
  }
  unsigned frac = 0;
  if (s.size() > 19) {
    const size_t n = s.size() - 20;
    if (s[19] != '.' || n < 1 || n > 6 || !digits(s, 20, n, frac)) return false;
    for (size_t k = n; k < 6; ++k) frac *= 10;
  }
  micros = ((days * 24 + h) * 60 + mi) * 60'000'000 + int64_t{sec} * 1'000'000 + frac;
  return true;
}

}  // namespace

std::optional<Literal> temporal_from_text(std::string_view text) {
  int64_t v = 0;
  if (text.size() == 10 && parse_date_prefix(text, v)) return Literal::date(v);
  if (parse_timestamp(text, v)) return Literal::timestamp(v);
  return std::nullopt;
}

namespace {

class Parser {
 public:
  Parser(std::string_view src, std::vector<Token> toks, uint32_t max_depth)
      : src_(src), toks_(std::move(toks)), max_depth_(max_depth) {}

  Result<ExprPtr> parse() {
    OC_ASSIGN_OR_RETURN(auto e, parse_binary(kOrPrec, 0));
    if (peek().kind != Tok::end) return unexpected(peek());
    return e;
  }

 private:
  static constexpr int kOrPrec = 1;
  static constexpr int kAndPrec = 2;

  [[nodiscard]] const Token& peek() const { return toks_[i_]; }
  const Token& take() { return toks_[i_ < toks_.size() - 1 ? i_++ : i_]; }

  [[nodiscard]] Error error_at(const Token& t, std::string msg, Errc code = Errc::invalid) const {
    return OC_ERROR(code, "{}{}", msg, point_at(src_, t.pos));
  }
  [[nodiscard]] Error unexpected(const Token& t) const {
    if (t.kind == Tok::end) return error_at(t, "unexpected end of input");
    return error_at(t, fmt::format("unexpected '{}'", src_.substr(t.pos, t.end - t.pos)));
  }
  Result<void> expect(Tok kind) {
    if (peek().kind != kind) return unexpected(peek());
    take();
    return {};
  }
  Result<void> enter(const Token& t, uint32_t depth) const {
    if (depth >= max_depth_) {
      return error_at(t, fmt::format("expression nested deeper than {} levels", max_depth_));
    }
    return {};
  }

  // Precedence climbing over OR and AND. Operands of one operator collect into a single n-ary
  // node, so long chains make wide nodes rather than deep ones (later passes recurse on depth).
  Result<ExprPtr> parse_binary(int min_prec, uint32_t depth) {
    OC_ASSIGN_OR_RETURN(ExprPtr lhs, parse_not(depth));
    std::shared_ptr<Expr> chain;  // the node this loop built last; lhs points at it
    while (true) {
      const Token& t = peek();
      const int prec = keyword_eq(t, "OR") ? kOrPrec : keyword_eq(t, "AND") ? kAndPrec : 0;
      if (prec == 0 || prec < min_prec) return lhs;
      const ExprKind kind = prec == kOrPrec ? ExprKind::or_ : ExprKind::and_;
      take();
      OC_ASSIGN_OR_RETURN(ExprPtr rhs, parse_binary(prec + 1, depth));
      if (chain && chain->kind == kind) {
        chain->children.push_back(std::move(rhs));
        continue;
      }
      chain = std::make_shared<Expr>();
      chain->kind = kind;
      chain->pos = t.pos;
      chain->children = {std::move(lhs), std::move(rhs)};
      lhs = chain;
    }
  }

  Result<ExprPtr> parse_not(uint32_t depth) {
    const Token& t = peek();
    if (!keyword_eq(t, "NOT")) return parse_predicate(depth);
    OC_TRY(enter(t, depth));
    take();
    OC_ASSIGN_OR_RETURN(ExprPtr x, parse_not(depth + 1));
    return Expr::make(ExprKind::not_, {std::move(x)}, t.pos);
  }

  Result<ExprPtr> parse_predicate(uint32_t depth) {
    OC_ASSIGN_OR_RETURN(ExprPtr lhs, parse_primary(depth));
    const Token& t = peek();
    if (t.kind == Tok::cmp) {
      take();
      OC_ASSIGN_OR_RETURN(ExprPtr rhs, parse_primary(depth));
      return Expr::compare(t.op, std::move(lhs), std::move(rhs), t.pos);
    }
    if (keyword_eq(t, "IS")) {
      take();
      const bool negated = keyword_eq(peek(), "NOT");
      if (negated) take();
      if (!keyword_eq(peek(), "NULL")) return unexpected(peek());
      take();
      return Expr::is_null(std::move(lhs), negated, t.pos);
    }
    const bool negated = keyword_eq(t, "NOT");
    if (negated) take();
    const Token& kw = peek();
    ExprPtr e;
    if (keyword_eq(kw, "IN")) {
      OC_ASSIGN_OR_RETURN(e, parse_in(std::move(lhs), depth));
    } else if (keyword_eq(kw, "BETWEEN")) {
      take();
      OC_ASSIGN_OR_RETURN(ExprPtr lo, parse_primary(depth));
      if (!keyword_eq(peek(), "AND")) return unexpected(peek());
      take();
      OC_ASSIGN_OR_RETURN(ExprPtr hi, parse_primary(depth));
      e = Expr::make(ExprKind::between, {std::move(lhs), std::move(lo), std::move(hi)}, kw.pos);
    } else if (keyword_eq(kw, "LIKE")) {
      OC_ASSIGN_OR_RETURN(e, parse_like(std::move(lhs)));
    } else if (negated) {
      return unexpected(kw);
    } else {
      return lhs;
    }
    return negated ? Expr::make(ExprKind::not_, {std::move(e)}, t.pos) : e;
  }

  Result<ExprPtr> parse_in(ExprPtr lhs, uint32_t depth) {
    const uint32_t pos = take().pos;
    OC_TRY(expect(Tok::lparen));
    std::vector<ExprPtr> items{std::move(lhs)};
    while (true) {
      OC_ASSIGN_OR_RETURN(ExprPtr item, parse_primary(depth));
      items.push_back(std::move(item));
      if (peek().kind != Tok::comma) break;
      take();
    }
    OC_TRY(expect(Tok::rparen));
    return Expr::make(ExprKind::in_list, std::move(items), pos);
  }

  // Only patterns a scan can answer with a byte comparison are accepted: an exact match, or a
  // prefix followed by one '%'. '_' and inner '%' would need a real matcher (and ESCAPE).
  Result<ExprPtr> parse_like(ExprPtr lhs) {
    const uint32_t pos = take().pos;
    const Token& p = peek();
    if (p.kind != Tok::string) return unexpected(p);
    take();
    const std::string& s = p.text;
    const size_t pct = s.find('%');
    if (s.find('_') != std::string::npos || (pct != std::string::npos && pct + 1 != s.size())) {
      return error_at(p,
                      fmt::format("unsupported LIKE pattern '{}': only exact matches and "
                                  "'prefix%' (one trailing %, no _) are supported",
                                  s),
                      Errc::unsupported);
    }
    return Expr::make(ExprKind::like, {std::move(lhs), Expr::lit(Literal::string(s), p.pos)}, pos);
  }

  Result<ExprPtr> parse_primary(uint32_t depth) {
    const Token& t = peek();
    switch (t.kind) {
      case Tok::lparen: {
        OC_TRY(enter(t, depth));
        take();
        OC_ASSIGN_OR_RETURN(ExprPtr e, parse_binary(kOrPrec, depth + 1));
        OC_TRY(expect(Tok::rparen));
        return e;
      }
      case Tok::string:
        take();
        return Expr::lit(Literal::string(t.text), t.pos);
      case Tok::integer:
      case Tok::floating:
      case Tok::minus:
        return parse_number();
      case Tok::quoted_name:
        return parse_path();
      case Tok::name:
        break;
      default:
        return unexpected(t);
    }
    if (keyword_eq(t, "NULL")) return literal(Literal::null_value());
    if (keyword_eq(t, "TRUE")) return literal(Literal::boolean(true));
    if (keyword_eq(t, "FALSE")) return literal(Literal::boolean(false));
    if (keyword_eq(t, "DATE") || keyword_eq(t, "TIMESTAMP")) return parse_temporal();
    if (is_keyword(t.text)) return unexpected(t);
    return parse_path();
  }

  Result<ExprPtr> literal(Literal l) { return Expr::lit(std::move(l), take().pos); }

  Result<ExprPtr> parse_path() {
    const uint32_t pos = peek().pos;
    std::vector<std::string> path;
    while (true) {
      const Token& t = peek();
      if (t.kind != Tok::quoted_name && (t.kind != Tok::name || is_keyword(t.text))) {
        return unexpected(t);
      }
      path.push_back(take().text);
      if (peek().kind != Tok::dot) return Expr::column(std::move(path), pos);
      take();
    }
  }

  Result<ExprPtr> parse_temporal() {
    const Token& kw = take();
    const bool is_date = keyword_eq(kw, "DATE");
    const Token& s = peek();
    if (s.kind != Tok::string) return unexpected(s);
    take();
    int64_t v = 0;
    if (is_date ? !(s.text.size() == 10 && parse_date_prefix(s.text, v))
                : !parse_timestamp(s.text, v)) {
      return error_at(
          s, fmt::format("invalid {} '{}': expected {}", is_date ? "DATE" : "TIMESTAMP", s.text,
                         is_date ? "'YYYY-MM-DD'" : "'YYYY-MM-DD HH:MM:SS[.ffffff]'"));
    }
    return Expr::lit(is_date ? Literal::date(v) : Literal::timestamp(v), kw.pos);
  }

  Result<ExprPtr> parse_number() {
    const Token& first = peek();
    const bool neg = first.kind == Tok::minus;
    if (neg) take();
    const Token& t = peek();
    if (t.kind != Tok::integer && t.kind != Tok::floating) return unexpected(t);
    take();
    const char* b = t.text.data();
    const char* e = b + t.text.size();
    if (t.kind == Tok::floating) {
      double d = 0;
      const auto r = std::from_chars(b, e, d);
      if (r.ec != std::errc() || r.ptr != e) return error_at(t, "float literal out of range");
      return Expr::lit(Literal::float64(neg ? -d : d), first.pos);
    }
    uint64_t u = 0;
    const auto r = std::from_chars(b, e, u);
    constexpr uint64_t kMaxI64 = std::numeric_limits<int64_t>::max();
    if (r.ec != std::errc() || r.ptr != e || (neg && u > kMaxI64 + 1)) {
      return error_at(t, "integer literal out of range");
    }
    Literal l;
    if (neg)
      l = Literal::int64(u == kMaxI64 + 1 ? std::numeric_limits<int64_t>::min()
                                          : -static_cast<int64_t>(u));
    else
      l = u <= kMaxI64 ? Literal::int64(static_cast<int64_t>(u)) : Literal::uint64(u);
    return Expr::lit(std::move(l), first.pos);
  }

  std::string_view src_;
  std::vector<Token> toks_;
  size_t i_ = 0;
  uint32_t max_depth_;
};

}  // namespace

Result<ExprPtr> parse_expr(std::string_view sql) {
  OC_EXPECT(sql.size() < std::numeric_limits<uint32_t>::max(), invalid,
            "expression of {} bytes is too long", sql.size());
  OC_ASSIGN_OR_RETURN(auto toks, Lexer(sql).run());
  return Parser(sql, std::move(toks), defaults().max_expr_depth).parse();
}

Result<void> fuzz_parse_expr(std::span<const uint8_t> bytes) {
  const std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  OC_ASSIGN_OR_RETURN(auto e, parse_expr(text));
  const std::string printed = to_string(*e);
  auto again = parse_expr(printed);
  // Printing adds parentheses only where precedence needs them, so it never nests deeper than
  // the input did; any failure or difference here is a printer or parser bug.
  if (!again.ok() || to_string(**again) != printed) __builtin_trap();
  return {};
}

}  // namespace oc::format
