// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief FastLanes bit unpacking (the `fastlanes.bitpacked` block layout), shared by the CPU
/// decoder, tests and GPU kernels.
///
/// A block packs 1024 values of an unsigned type T (B = 8 x sizeof(T) bits) at width W (0..B)
/// into 1024 x W bits = 128 x W bytes = L x W words of T, where L = 1024 / B is the lane count.
/// Lane l owns words l, L + l, 2L + l, ...; read in that order, least significant bit first,
/// they form one bit stream holding the lane's B values of W bits each (rows 0..B-1).
/// Row r of lane l is the value at position
///
///     kTransposedOrder[r / 8] x 16 + (r % 8) x 128 + l
///
/// of the block, the FastLanes "unified transposed" order.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>

#if defined(__CUDACC__)
#define OC_FASTLANES_HOST_DEVICE __host__ __device__
#else
#define OC_FASTLANES_HOST_DEVICE
#endif

namespace oc::format::encodings {

/// Values per FastLanes block.
inline constexpr unsigned kFastLanesBlock = 1024;
/// Position of row group g (8 rows each) within a block, in units of 16 values.
inline constexpr unsigned kTransposedOrder[8] = {0, 4, 2, 6, 1, 5, 3, 7};

/// @return the position in the block of row @p row of lane @p lane. kTransposedOrder[g] is g
/// with its three bits reversed, computed here so that device code needs no table.
[[nodiscard]] OC_FASTLANES_HOST_DEVICE constexpr unsigned fastlanes_index(unsigned row,
                                                                          unsigned lane) noexcept {
  const unsigned group = row / 8;
  const unsigned reversed = ((group & 1) << 2) | (group & 2) | ((group >> 2) & 1);
  return reversed * 16 + (row % 8) * 128 + lane;
}
static_assert([] {
  for (unsigned group = 0; group < 8; ++group) {
    if (fastlanes_index(group * 8, 0) != kTransposedOrder[group] * 16) return false;
  }
  return true;
}());

/// @return bytes of one packed block at @p width bits per value (the same for every T).
[[nodiscard]] OC_FASTLANES_HOST_DEVICE constexpr size_t packed_block_bytes(
    unsigned width) noexcept {
  return size_t{128} * width;
}

/// Unpacks one block of 1024 values at a width fixed at compile time (see `unpack_block`, which
/// dispatches to it on the host; device code can instantiate it directly).
template <class T, unsigned W>
OC_FASTLANES_HOST_DEVICE void unpack_block_fixed(const T* packed, T* out) noexcept {
  constexpr unsigned kBits = sizeof(T) * 8;
  constexpr unsigned kLanes = kFastLanesBlock / kBits;
  static_assert(W <= kBits);
  if constexpr (W == 0) {
    for (unsigned i = 0; i < kFastLanesBlock; ++i) out[i] = 0;
  } else {
    constexpr T kMask =
        W == kBits ? static_cast<T>(~T{0}) : static_cast<T>((T{1} << (W % kBits)) - 1);
    // Row by row, every lane at once: contiguous loads and stores the compiler vectorizes.
    for (unsigned row = 0; row < kBits; ++row) {
      const unsigned first_bit = row * W;
      const T* word = packed + kLanes * (first_bit / kBits);
      const unsigned shift = first_bit % kBits;
      T* dst = out + fastlanes_index(row, 0);
      if (shift + W > kBits) {  // the value continues in the lane's next word
        for (unsigned lane = 0; lane < kLanes; ++lane) {
          dst[lane] = static_cast<T>(
              ((word[lane] >> shift) | (word[kLanes + lane] << (kBits - shift))) & kMask);
        }
      } else {
        for (unsigned lane = 0; lane < kLanes; ++lane) {
          dst[lane] = static_cast<T>((word[lane] >> shift) & kMask);
        }
      }
    }
  }
}

namespace detail {
template <class T, unsigned... Ws>
constexpr auto unpack_table(std::integer_sequence<unsigned, Ws...>) {
  using Fn = void (*)(const T*, T*) noexcept;
  return std::array<Fn, sizeof...(Ws)>{&unpack_block_fixed<T, Ws>...};
}
}  // namespace detail

/// Unpacks one block of 1024 values.
/// @tparam T      uint8_t, uint16_t, uint32_t or uint64_t (signed values unpack as their bits)
/// @param packed  `packed_block_bytes(width) / sizeof(T)` words
/// @param width   bits per value, 0..8 x sizeof(T); the caller checks (wider is a no-op)
/// @param out     1024 values in logical order
template <class T>
void unpack_block(const T* packed, unsigned width, T* out) noexcept {
  static constexpr auto kTable =
      detail::unpack_table<T>(std::make_integer_sequence<unsigned, sizeof(T) * 8 + 1>());
  if (width < kTable.size()) kTable[width](packed, out);
}

/// Extracts one value of a packed block without unpacking the rest (for random access).
/// @tparam T     as for `unpack_block`
/// @param packed `packed_block_bytes(width) / sizeof(T)` words
/// @param width  bits per value, 0..8 x sizeof(T); the caller checks
/// @param index  position of the value in the block's logical order, 0..1023
/// @return the value at @p index, found by inverting `fastlanes_index`: position bits 7..9 are
/// the row within its group of 8, and the low 7 bits are 16 x reversed group + lane.
template <class T>
[[nodiscard]] OC_FASTLANES_HOST_DEVICE T unpack_one(const T* packed, unsigned width,
                                                    unsigned index) noexcept {
  constexpr unsigned kBits = sizeof(T) * 8;
  constexpr unsigned kLanes = kFastLanesBlock / kBits;
  if (width == 0) return 0;
  const unsigned low = index % 128;
  const unsigned lane = low % kLanes;
  const unsigned reversed = (low - lane) / 16;
  const unsigned group = ((reversed & 1) << 2) | (reversed & 2) | ((reversed >> 2) & 1);
  const unsigned first_bit = (group * 8 + index / 128) * width;
  const T* word = packed + kLanes * (first_bit / kBits) + lane;
  const unsigned shift = first_bit % kBits;
  T value = static_cast<T>(word[0] >> shift);
  if (shift + width > kBits) value = static_cast<T>(value | (word[kLanes] << (kBits - shift)));
  const T mask = width == kBits ? static_cast<T>(~T{0}) : static_cast<T>((T{1} << width) - 1);
  return static_cast<T>(value & mask);
}

}  // namespace oc::format::encodings
