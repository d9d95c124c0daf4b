// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief Size arithmetic on untrusted values: products, sums and round-ups that cannot wrap.
///
/// Every count, width, offset and length read from a file, a server response or a client
/// message goes through these before it sizes an allocation or bounds a copy. The checked forms
/// return nullopt on overflow; the saturating forms return UINT64_MAX, which fails every limit
/// check (`DecodeContext::check_alloc`), so a wrapped product can never pass one.
#pragma once

#include <cstdint>
#include <optional>

namespace oc {

/// @return @p a × @p b, or nullopt when it does not fit 64 bits.
[[nodiscard]] constexpr std::optional<uint64_t> checked_mul(uint64_t a, uint64_t b) noexcept {
  uint64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

/// @return @p a + @p b, or nullopt when it does not fit 64 bits.
[[nodiscard]] constexpr std::optional<uint64_t> checked_add(uint64_t a, uint64_t b) noexcept {
  uint64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

/// @return @p v rounded up to a multiple of @p align (a power of two), or nullopt on overflow.
[[nodiscard]] constexpr std::optional<uint64_t> checked_round_up(uint64_t v,
                                                                 uint64_t align) noexcept {
  const auto r = checked_add(v, align - 1);
  if (!r) return std::nullopt;
  return *r & ~(align - 1);
}

/// @return the bytes a bitmap of @p bits bits takes (rounded up, without forming bits + 7).
[[nodiscard]] constexpr uint64_t bitmap_bytes(uint64_t bits) noexcept {
  return bits / 8 + (bits % 8 != 0);
}

/// @return @p a × @p b, or UINT64_MAX when it overflows.
[[nodiscard]] constexpr uint64_t saturating_mul(uint64_t a, uint64_t b) noexcept {
  return checked_mul(a, b).value_or(UINT64_MAX);
}

/// @return @p a + @p b, or UINT64_MAX when it overflows.
[[nodiscard]] constexpr uint64_t saturating_add(uint64_t a, uint64_t b) noexcept {
  return checked_add(a, b).value_or(UINT64_MAX);
}

/// @return whether [@p offset, @p offset + @p length) lies within [0, @p size), without forming
/// the sum.
[[nodiscard]] constexpr bool range_within(uint64_t offset, uint64_t length,
                                          uint64_t size) noexcept {
  return offset <= size && length <= size - offset;
}

/// @return whether @p count items of @p width bytes each take exactly @p bytes (no wrap).
[[nodiscard]] constexpr bool holds_exactly(uint64_t bytes, uint64_t count,
                                           uint64_t width) noexcept {
  const auto need = checked_mul(count, width);
  return need && *need == bytes;
}

/// @return whether @p bytes hold at least @p count items of @p width bytes each (no wrap).
[[nodiscard]] constexpr bool holds_at_least(uint64_t bytes, uint64_t count,
                                            uint64_t width) noexcept {
  const auto need = checked_mul(count, width);
  return need && *need <= bytes;
}

}  // namespace oc
