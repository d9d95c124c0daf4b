// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief Binding: resolves a parsed filter against a file's schema and type-checks it.
///
/// A bound expression is what `format/expr_eval.hpp` runs. Binding resolves every column path to
/// struct field indices, checks that each comparison is between comparable types and rewrites the
/// tree into a few primitive forms:
///
/// | parsed                   | bound                                                       |
/// |--------------------------|-------------------------------------------------------------|
/// | `col op lit`, `lit op col` | compare (the literal side is always the right one)       |
/// | `col op NULL`            | constant NULL (SQL: comparing with NULL is unknown)         |
/// | `col IN (l1, l2, …)`     | or_ of `col = li`  (same three-valued result as SQL IN)     |
/// | `col BETWEEN lo AND hi`  | and_ of `col >= lo`, `col <= hi`                            |
/// | `col LIKE 'p%'` / `'p'`  | starts_with `p` / compare `= 'p'`                           |
/// | bare bool column, literal TRUE/FALSE/NULL | column_bool / constant                     |
///
/// Comparable pairs: any integer or float column (not f16) with an integer or float literal;
/// utf8 and binary columns with string literals; bool with TRUE/FALSE; `vortex.date` and
/// `vortex.timestamp` columns with DATE and TIMESTAMP literals (a DATE is midnight UTC; zoned
/// timestamps compare as UTC instants, which is what their storage holds).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "config/error.hpp"
#include "format/dtype.hpp"
#include "format/expr.hpp"

namespace oc::format {

/// A column the filter reads.
struct BoundColumn {
  std::vector<std::string> path;  ///< field names from the root struct
  std::vector<uint32_t> indices;  ///< the struct child index at each level of `path`
  DTypePtr type;                  ///< the leaf's dtype (extensions kept)
};

/// Three-valued truth of SQL.
enum class Truth : uint8_t { false_ = 0, true_ = 1, null = 2 };

struct BoundNode {
  enum class Kind : uint8_t {
    constant,
    column_bool,
    compare,
    starts_with,
    is_null,
    and_,
    or_,
    not_
  };
  Kind kind = Kind::constant;
  Truth constant = Truth::null;  ///< constant
  uint32_t column = 0;           ///< column_bool, compare, starts_with, is_null: index into columns
  CmpOp op = CmpOp::eq;          ///< compare: `column op literal`
  bool negated = false;          ///< is_null: IS NOT NULL
  /// compare: int64/uint64/float64 for numeric columns, boolean, string (also the starts_with
  /// prefix); for temporal columns a timestamp in microseconds (DATE literals converted).
  Literal literal;
  std::vector<BoundNode> children;  ///< and_, or_ (two or more), not_ (one)
};

struct BoundExpr {
  BoundNode root;
  /// Every column the filter reads, each once, in order of first use: the projection a scan
  /// must decode to evaluate it.
  std::vector<BoundColumn> columns;
};

/// Binds @p e against @p schema (a struct dtype: the file's root type).
/// @param source the text @p e was parsed from; when given, errors end with `point_at`'s caret
///        line, otherwise with the column number only.
/// @return `Errc::not_found` for an unknown column (the message lists the fields that exist),
/// `Errc::invalid` for incomparable types or a non-boolean predicate, `Errc::unsupported` for
/// forms evaluation does not implement (column vs column, f16, decimal, nested types, TIME).
[[nodiscard]] Result<BoundExpr> bind(const Expr& e, const DType& schema,
                                     std::string_view source = {});

}  // namespace oc::format
