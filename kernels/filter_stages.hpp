// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief Predicate evaluation for GPU filters, as `__host__ __device__` code shared by the
/// selection kernel (kernels/filter.cu) and its host reference (`select_on_host`).
///
/// A predicate compares every value of a decoded fixed-width column with one literal:
///   values:    n little-endian values of `value_bytes` (1, 2, 4 or 8) each, row 0 first;
///   validity:  optional Arrow bitmap, ceil(n / 8) bytes, LSB first: bit i (byte i / 8,
///              bit i % 8) is 1 when row i is valid, 0 when it is null; no offset. A null
///              pointer means every row is valid. Bits past row n - 1 are ignored. E.g. 10
///              rows with row 3 null: F7 03;
///   mask:      n bytes, 1 where the row is selected, else 0 (CUB's flag layout);
///   output:    the selected values, in row order, and their count as one u64.
/// Nulls follow SQL's three-valued logic, as the CPU scan's filter does (format/expr_eval.hpp):
/// a comparison with a null value is null, and a null truth drops the row, so a null row is
/// never selected, for every op (`ne` included).
/// Floats compare as IEEE 754 does: every comparison with NaN is false except `ne`; -0.0 == 0.0.
///
/// @note Untested on GPU hardware so far (see kernels/DEVICE_NOTES.md).
#pragma once

#include <cstdint>
#include <cstring>

#include "kernels/fused_stages.hpp"

namespace oc::kernels {

enum class CompareOp : uint8_t { eq, ne, lt, le, gt, ge };
enum class ValueKind : uint8_t { unsigned_int, signed_int, floating };

/// `value <op> literal`, for values of one type.
struct Predicate {
  CompareOp op = CompareOp::eq;
  ValueKind kind = ValueKind::unsigned_int;
  uint8_t value_bytes = 0;    ///< 1, 2, 4 or 8 (floats: 4 or 8)
  uint64_t literal_bits = 0;  ///< the literal, in the values' own type and width
};

template <class T>
[[nodiscard]] OC_HOST_DEVICE inline bool filter_compare(CompareOp op, T a, T b) noexcept {
  switch (op) {
    case CompareOp::eq:
      return a == b;
    case CompareOp::ne:
      return a != b;
    case CompareOp::lt:
      return a < b;
    case CompareOp::le:
      return a <= b;
    case CompareOp::gt:
      return a > b;
    default:
      return a >= b;
  }
}

/// @return whether the value whose bits are @p bits (low `value_bytes` bytes) satisfies @p p.
[[nodiscard]] OC_HOST_DEVICE inline bool predicate_holds(const Predicate& p,
                                                         uint64_t bits) noexcept {
  switch (p.kind) {
    case ValueKind::unsigned_int:
      return filter_compare(p.op, fused_mask(bits, p.value_bytes),
                            fused_mask(p.literal_bits, p.value_bytes));
    case ValueKind::signed_int:
      return filter_compare(p.op, static_cast<int64_t>(fused_sign_extend(bits, p.value_bytes)),
                            static_cast<int64_t>(fused_sign_extend(p.literal_bits, p.value_bytes)));
    default:
      if (p.value_bytes == 4) {
        const auto a_bits = static_cast<uint32_t>(bits),
                   b_bits = static_cast<uint32_t>(p.literal_bits);
        float a, b;
        memcpy(&a, &a_bits, 4);
        memcpy(&b, &b_bits, 4);
        return filter_compare(p.op, a, b);
      } else {
        double a, b;
        memcpy(&a, &bits, 8);
        memcpy(&b, &p.literal_bits, 8);
        return filter_compare(p.op, a, b);
      }
  }
}

/// @return whether row @p row is valid in the bitmap @p validity (layout above; null: every row).
[[nodiscard]] OC_HOST_DEVICE inline bool filter_valid(const uint8_t* validity,
                                                      uint64_t row) noexcept {
  return validity == nullptr || ((validity[row >> 3] >> (row & 7)) & 1) != 0;
}

/// The mask flag of row @p row of the column at @p values / @p validity (layout above): 1 when
/// the row is valid and @p p holds for its value, else 0. The selection kernel and
/// `select_on_host` both compute every flag with this function.
[[nodiscard]] OC_HOST_DEVICE inline uint8_t select_row(const Predicate& p, const void* values,
                                                       const uint8_t* validity,
                                                       uint64_t row) noexcept {
  return filter_valid(validity, row) && predicate_holds(p, fused_load(values, row, p.value_bytes))
             ? 1
             : 0;
}

}  // namespace oc::kernels
