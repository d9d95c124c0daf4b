// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief Decimal value width conversion shared by vortex.decimal and vortex.decimal_byte_parts.
#pragma once

#include <cstddef>
#include <cstdint>

#include "config/error.hpp"
#include "format/buffer.hpp"

namespace oc::format::encodings {

/// @return the Arrow value width of a decimal of @p precision: 16 bytes (i128) up to precision
/// 38, else 32 bytes (i256).
[[nodiscard]] constexpr size_t decimal_arrow_width(uint8_t precision) noexcept {
  return precision <= 38 ? 16 : 32;
}

/// Converts @p len little-endian two's-complement integers of @p src_width bytes each (1, 2, 4,
/// 8, 16 or 32) into a new buffer of @p out_width bytes each, sign-extending when widening.
/// @return `Errc::corrupt` when narrowing (i256 to i128) meets a value that does not fit.
/// @note The caller checks that @p src holds len x src_width bytes.
[[nodiscard]] Result<Buffer> resize_decimal_values(const uint8_t* src, size_t src_width,
                                                   uint64_t len, size_t out_width);

}  // namespace oc::format::encodings
