// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief Row-level evaluation of a bound filter over a decoded struct batch.
///
/// Semantics are SQL's three-valued logic:
/// - a comparison, IN, BETWEEN or LIKE on a null value is NULL; `IS [NOT] NULL` is never NULL;
///   a field is null when it or any struct above it (the batch included) is null;
/// - AND is FALSE if any operand is FALSE, else NULL if any is NULL; OR is TRUE if any operand is
///   TRUE, else NULL if any is NULL; NOT NULL is NULL (Kleene);
/// - floats follow IEEE 754 as Arrow compute does: NaN is unequal to everything, itself included
///   (`!=` is TRUE), and every ordering comparison with NaN is FALSE; -0.0 equals 0.0;
/// - integers of any width and sign compare exactly with integer literals; an integer compared
///   with a float literal is converted to double first (inexact beyond 2^53);
/// - strings and binary compare bytewise, unsigned (UTF-8 code point order);
/// - temporal columns compare their stored integers, in the column's unit, exactly with the
///   literal's instant (no rounding: `ts_s >= TIMESTAMP '… 00:00:00.5'` is false at second 0).
///
/// The filter keeps a row only when the predicate is TRUE.
#pragma once

#include <cstdint>
#include <vector>

#include "config/error.hpp"
#include "format/column.hpp"
#include "format/expr_bind.hpp"

namespace oc::format {

/// The rows a filter keeps.
struct Mask {
  std::vector<uint8_t> keep;  ///< one byte per batch row: 1 when the predicate is TRUE, else 0
  uint64_t count = 0;         ///< number of kept rows
};

/// Evaluates @p e over @p batch, returning each row's truth value.
/// @param batch a struct column of the schema @p e was bound against.
/// @return `Errc::invalid` when the batch does not have the bound shape (missing field, other
/// type), `Errc::corrupt` when its buffers are too short or string offsets leave their bytes.
[[nodiscard]] Result<std::vector<Truth>> evaluate_truth(const BoundExpr& e, const Column& batch);

/// Evaluates @p e over @p batch; the mask keeps the rows where it is TRUE.
[[nodiscard]] Result<Mask> evaluate(const BoundExpr& e, const Column& batch);

/// Kleene AND (@p is_and) or OR of the Truth bytes of @p other into @p into, row by row; both
/// hold @p n bytes. Shared by every evaluator of bound filters.
void combine_truths(bool is_and, uint8_t* into, const uint8_t* other, uint64_t n) noexcept;

/// The indices of the rows @p mask keeps, in order, each plus @p base.
[[nodiscard]] std::vector<uint64_t> kept_rows(const Mask& mask, uint64_t base = 0);

/// The rows of @p c that @p mask keeps, in order (a `take` of the kept indices).
/// @return `Errc::invalid` when the mask's length is not the column's.
[[nodiscard]] Result<ColumnPtr> filter_rows(const ColumnPtr& c, const Mask& mask);

}  // namespace oc::format
