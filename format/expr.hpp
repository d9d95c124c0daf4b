// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief Filter expressions: the tree a SQL WHERE clause parses into, and its SQL rendering.
///
/// The tree is untyped; `format/expr_bind.hpp` resolves it against a file's schema and
/// `format/expr_eval.hpp` runs it over a decoded batch. Every node keeps the byte offset of the
/// token that introduced it, so binding errors can point at the source text.
///
/// Supported constructs (the parser in `format/expr_parser.hpp` accepts exactly these):
///
/// | node       | SQL                                   | children                        |
/// |------------|---------------------------------------|---------------------------------|
/// | column     | `a`, `a.b.c`, `"weird name".x`         | none (`path`)                   |
/// | literal    | `NULL TRUE 42 1.5e3 'x' DATE '…' TIMESTAMP '…'` | none (`literal`)      |
/// | compare    | `l = r`, `!=`/`<>`, `<`, `<=`, `>`, `>=` | [l, r]                        |
/// | and_, or_  | `x AND y AND …`, `x OR y OR …`         | two or more, flattened          |
/// | not_       | `NOT x`                               | [x]                             |
/// | is_null    | `x IS NULL`, `x IS NOT NULL` (`negated`) | [x]                          |
/// | in_list    | `x IN (lit, …)`                       | [x, lit, …]                     |
/// | between    | `x BETWEEN lo AND hi`                 | [x, lo, hi]                     |
/// | like       | `x LIKE 'pattern'`                    | [x, pattern literal]            |
///
/// `NOT IN`, `NOT BETWEEN` and `NOT LIKE` parse into a `not_` over the positive form.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace oc::format {

/// A literal value as written in the expression.
struct Literal {
  enum class Kind : uint8_t { null, boolean, int64, uint64, float64, string, date, timestamp };
  Kind kind = Kind::null;
  bool b = false;  ///< boolean
  int64_t i = 0;   ///< int64; date: days since 1970-01-01; timestamp: microseconds since epoch
  uint64_t u = 0;  ///< uint64: integers above INT64_MAX only
  double f = 0;    ///< float64
  std::string s;   ///< string (raw bytes, no escapes)

  [[nodiscard]] static Literal null_value();
  [[nodiscard]] static Literal boolean(bool v);
  [[nodiscard]] static Literal int64(int64_t v);
  [[nodiscard]] static Literal uint64(uint64_t v);
  [[nodiscard]] static Literal float64(double v);
  [[nodiscard]] static Literal string(std::string v);
  [[nodiscard]] static Literal date(int64_t days);
  [[nodiscard]] static Literal timestamp(int64_t micros);
};

/// The SQL spelling of @p l: `NULL`, `TRUE`, `-3`, `1.5`, `'it''s'`, `DATE '2024-01-31'`,
/// `TIMESTAMP '2024-01-31 12:34:56.000001'`. Floats always carry a `.` or an exponent so they
/// read back as floats.
[[nodiscard]] std::string literal_to_string(const Literal& l);

enum class ExprKind : uint8_t {
  column,
  literal,
  compare,
  and_,
  or_,
  not_,
  is_null,
  in_list,
  between,
  like
};
enum class CmpOp : uint8_t { eq, ne, lt, le, gt, ge };

/// @return "=", "!=", "<", "<=", ">", ">=".
[[nodiscard]] std::string_view cmp_op_name(CmpOp op) noexcept;

struct Expr;
using ExprPtr = std::shared_ptr<const Expr>;

/// One node; which fields matter depends on `kind` (see the table in the file comment).
struct Expr {
  ExprKind kind = ExprKind::literal;
  uint32_t pos = 0;               ///< 0-based byte offset of the node's token in the source
  std::vector<std::string> path;  ///< column: field names from the root struct down
  Literal literal;                ///< literal
  CmpOp op = CmpOp::eq;           ///< compare
  bool negated = false;           ///< is_null: IS NOT NULL
  std::vector<ExprPtr> children;

  [[nodiscard]] static ExprPtr column(std::vector<std::string> path, uint32_t pos);
  [[nodiscard]] static ExprPtr lit(Literal l, uint32_t pos);
  [[nodiscard]] static ExprPtr make(ExprKind kind, std::vector<ExprPtr> children, uint32_t pos);
  [[nodiscard]] static ExprPtr compare(CmpOp op, ExprPtr l, ExprPtr r, uint32_t pos);
  [[nodiscard]] static ExprPtr is_null(ExprPtr x, bool negated, uint32_t pos);
};

/// The dotted SQL spelling of a column path; components that are not plain identifiers (or are
/// keywords) are double-quoted with `""` escapes.
[[nodiscard]] std::string path_to_string(const std::vector<std::string>& path);

/// Prints @p e back as SQL, with parentheses only where precedence needs them, so that parsing
/// the result gives the same tree (`to_string(parse(to_string(e))) == to_string(e)`).
[[nodiscard]] std::string to_string(const Expr& e);

/// Locates byte offset @p pos of @p source for an error message:
/// `" at column 14\n  a > 3 AND (b)) \n               ^"` (1-based column, the source on its own
/// line with control characters shown as spaces, a caret under the offending byte).
[[nodiscard]] std::string point_at(std::string_view source, uint32_t pos);

/// The proleptic Gregorian date @p days after 1970-01-01 as `YYYY-MM-DD`.
[[nodiscard]] std::string date_to_string(int64_t days);

/// Days since 1970-01-01 of the proleptic Gregorian date @p y-@p m-@p d (not validated).
[[nodiscard]] int64_t days_from_civil(int64_t y, unsigned m, unsigned d) noexcept;

/// @return true when @p word is a reserved keyword of the filter grammar (case-insensitive).
[[nodiscard]] bool is_keyword(std::string_view word) noexcept;

}  // namespace oc::format
