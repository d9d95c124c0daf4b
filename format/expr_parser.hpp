// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief Parses the SQL WHERE subset of `format/expr.hpp` into an expression tree.
///
/// Grammar (keywords case-insensitive; `[]` optional, `{}` repeated):
///
///     expr      := and_expr { OR and_expr }
///     and_expr  := not_expr { AND not_expr }
///     not_expr  := NOT not_expr | predicate
///     predicate := primary [ cmp primary
///                          | IS [NOT] NULL
///                          | [NOT] IN '(' primary { ',' primary } ')'
///                          | [NOT] BETWEEN primary AND primary
///                          | [NOT] LIKE string ]
///     primary   := '(' expr ')' | column | literal
///     cmp       := '=' | '!=' | '<>' | '<' | '<=' | '>' | '>='
///     column    := name { '.' name }
///     name      := [A-Za-z_][A-Za-z0-9_]* | '"' ( [^"] | '""' )+ '"'
///     literal   := NULL | TRUE | FALSE | ['-'] integer | ['-'] float | string
///                | DATE 'YYYY-MM-DD' | TIMESTAMP 'YYYY-MM-DD HH:MM:SS[.f{1,6}]'
///     float     := digits ( '.' digits [exp] | exp )      exp := ('e'|'E') ['+'|'-'] digits
///     string    := "'" ( [^'] | "''" )* "'"
///
/// Precedence, tightest first: comparisons and the other predicates, NOT, AND, OR — the SQL
/// standard order, so `NOT a = 1` means `NOT (a = 1)`. Integers that fit int64 are int64, larger
/// ones up to UINT64_MAX are uint64. A bare name that is a keyword must be double-quoted to be a
/// column (`"date"`). LIKE accepts only exact patterns and one trailing `%` (a prefix match).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "config/error.hpp"
#include "format/expr.hpp"

namespace oc::format {

/// Parses @p sql into an expression tree.
/// @return `Errc::invalid` for malformed input and `Errc::unsupported` for LIKE patterns other
/// than `'prefix%'` or exact; the message names the offending token and ends with `point_at`'s
/// column and caret. Nesting of parentheses and NOT deeper than `defaults().max_expr_depth` is
/// `Errc::invalid`.
[[nodiscard]] Result<ExprPtr> parse_expr(std::string_view sql);

/// A string literal read as a temporal value, as DuckDB and PostgreSQL read `'1994-01-01'` next
/// to a date or timestamp column: 'YYYY-MM-DD' is a date, 'YYYY-MM-DD HH:MM:SS[.f{1,6}]' a
/// timestamp (UTC). @return nullopt for any other text.
[[nodiscard]] std::optional<Literal> temporal_from_text(std::string_view text);

/// Fuzzing entry point: parses @p bytes; on success prints the tree and parses the print again.
/// @return the parse error, if any. A printed tree that fails to parse or prints differently is
/// a bug in this module and traps, so libFuzzer records the input.
[[nodiscard]] Result<void> fuzz_parse_expr(std::span<const uint8_t> bytes);

}  // namespace oc::format
