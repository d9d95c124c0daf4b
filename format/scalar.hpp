// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief Scalar values: the protobuf `ScalarValue` (format/proto/scalar.proto) in typed form.
///
/// Scalars appear as constant-array values, FoR references, sequence base and multiplier, sparse
/// fill values and statistics. Integers travel as sint64 or uint64 whatever their width, so the
/// reader interprets them through the dtype the parent supplies.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "config/error.hpp"
#include "format/column.hpp"
#include "format/dtype.hpp"

namespace oc::format {

struct Scalar;
/// null | bool | int64 | uint64 | f32 | f64 | f16 bits | string | bytes | list
struct Scalar {
  struct Null {};
  struct F16 {
    uint16_t bits;
  };
  std::variant<Null, bool, int64_t, uint64_t, float, double, F16, std::string, std::vector<uint8_t>,
               std::vector<Scalar>>
      value;

  [[nodiscard]] bool is_null() const noexcept { return value.index() == 0; }
};

/// Decodes protobuf ScalarValue bytes. Empty input decodes as null.
[[nodiscard]] Result<Scalar> parse_scalar(std::span<const uint8_t> bytes);

/// @return the scalar as the raw little-endian bits of ptype @p p (for FoR, sequence, fill).
/// Fails with `Errc::corrupt` when the value does not fit @p p.
[[nodiscard]] Result<uint64_t> scalar_to_bits(const Scalar& s, PType p);

/// @return @p s as a decimal storage integer sign-extended to 32 bytes (little endian).
[[nodiscard]] Result<std::array<uint8_t, 32>> scalar_to_decimal(const Scalar& s);

/// A column of @p len copies of @p s with type @p t (null scalars give all-null columns).
[[nodiscard]] Result<ColumnPtr> scalar_to_column(const Scalar& s, const DTypePtr& t, uint64_t len);

/// Readable rendering for `onecopy inspect` ("42", "\"abc\"", "null").
[[nodiscard]] std::string scalar_to_string(const Scalar& s, const DType& t);

}  // namespace oc::format
