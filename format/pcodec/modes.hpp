// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief pcodec's modes: joining a batch's primary (l0) and secondary (l1) latents into numbers
/// (pco/src/mode/*.rs, pco/src/data_types/{float,signed,unsigned}.rs).
///
///   Classic     from_latent_ordered(l0)
///   IntMult     from_latent_ordered(l0 * base + l1)                        (wrapping)
///   FloatMult   from_latent_ordered(to_latent_ordered(int_float(l0) * base) + l1 + MID)
///   FloatQuant  from_latent_ordered((l0 << k) + (l0 >= MID >> k ? l1 : 2^k - 1 - l1))
///   Dict        from_latent_ordered(dict[l0]), l0 a u32 index (< dict size, else corrupt)
///
/// from_latent_ordered, the order-preserving map from latents to numbers: unsigned integers
/// are their latents; signed ones add MIN (flip the top bit); floats flip the sign bit when it
/// is set and every bit otherwise. int_float(l) maps a latent to the integer-valued float
/// l - MID (for |l - MID| below 2^mantissa_digits), past that counting on in float ULPs.
/// The product in FloatMult is one IEEE multiplication in the number's own precision (f16 as
/// half's: exact in f32, then rounded to nearest even).
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

#include "format/pcodec/delta.hpp"

namespace oc::format::pcodec::detail {

/// How a number's bits relate to its latent.
enum class NumKind : uint8_t { unsigned_int, signed_int, floating };

/// @return IEEE binary16 bits of @p f, rounded to nearest even (the `half` crate's rules, NaN
///         payloads kept in the top mantissa bits and quieted).
inline uint16_t f32_to_f16_bits(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t exp = (x >> 23) & 0xffu;
  uint32_t man = x & 0x7f'ffffu;
  if (exp == 0xff) {
    return static_cast<uint16_t>(man == 0 ? (sign | 0x7c00u) : (sign | 0x7e00u | (man >> 13)));
  }
  const int half_exp = static_cast<int>(exp) - 127 + 15;
  if (half_exp >= 0x1f) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow to infinity
  if (half_exp <= 0) {                                                 // subnormal or zero
    if (half_exp < -10) return static_cast<uint16_t>(sign);
    man |= 0x80'0000u;
    const auto shift = static_cast<uint32_t>(14 - half_exp);
    uint32_t half_man = man >> shift;
    const uint32_t round_bit = 1u << (shift - 1);
    if ((man & round_bit) != 0 && (man & (3 * round_bit - 1)) != 0) ++half_man;
    return static_cast<uint16_t>(sign | half_man);
  }
  const uint32_t out = sign | (static_cast<uint32_t>(half_exp) << 10) | (man >> 13);
  const uint32_t round_bit = 0x1000u;
  if ((man & round_bit) != 0 && (man & (3 * round_bit - 1)) != 0)
    return static_cast<uint16_t>(out + 1);
  return static_cast<uint16_t>(out);
}

/// @return the float binary16 bits @p h stand for (exact).
inline float f16_bits_to_f32(uint16_t h) {
  const uint32_t sign = uint32_t{h & 0x8000u} << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t man = h & 0x3ffu;
  if (exp == 0x1f) return std::bit_cast<float>(sign | 0x7f80'0000u | (man << 13));
  if (exp == 0) {
    if (man == 0) return std::bit_cast<float>(sign);
    // subnormal: man * 2^-24
    int e = -1;
    do {
      ++e;
      man <<= 1;
    } while ((man & 0x400u) == 0);
    return std::bit_cast<float>(sign | ((127 - 15 - e) << 23) | ((man & 0x3ffu) << 13));
  }
  return std::bit_cast<float>(sign | ((exp + 127 - 15) << 23) | (man << 13));
}

/// The float type whose bits have the width of @p L, and its operations on bits.
template <class L>
struct FloatBits;
template <>
struct FloatBits<uint16_t> {
  static constexpr uint32_t kMantissaDigits = 11;
  static uint16_t from_int(uint16_t i) { return f32_to_f16_bits(static_cast<float>(i)); }
  static uint16_t mul(uint16_t a, uint16_t b) {
    return f32_to_f16_bits(f16_bits_to_f32(a) * f16_bits_to_f32(b));  // exact in f32
  }
};
template <>
struct FloatBits<uint32_t> {
  static constexpr uint32_t kMantissaDigits = 24;
  static uint32_t from_int(uint32_t i) { return std::bit_cast<uint32_t>(static_cast<float>(i)); }
  static uint32_t mul(uint32_t a, uint32_t b) {
    return std::bit_cast<uint32_t>(std::bit_cast<float>(a) * std::bit_cast<float>(b));
  }
};
template <>
struct FloatBits<uint64_t> {
  static constexpr uint32_t kMantissaDigits = 53;
  static uint64_t from_int(uint64_t i) { return std::bit_cast<uint64_t>(static_cast<double>(i)); }
  static uint64_t mul(uint64_t a, uint64_t b) {
    return std::bit_cast<uint64_t>(std::bit_cast<double>(a) * std::bit_cast<double>(b));
  }
};

/// from_latent_ordered: the number's bits for latent @p l.
template <class L, NumKind K>
inline L number_bits(L l) {
  if constexpr (K == NumKind::unsigned_int) {
    return l;
  } else if constexpr (K == NumKind::signed_int) {
    return static_cast<L>(l ^ kMid<L>);
  } else {
    return (l & kMid<L>) ? static_cast<L>(l ^ kMid<L>) : static_cast<L>(~l);
  }
}

/// to_latent_ordered for floats: the latent of float bits @p b.
template <class L>
inline L float_latent(L b) {
  return (b & kMid<L>) ? static_cast<L>(~b) : static_cast<L>(b ^ kMid<L>);
}

/// int_float_from_latent: float bits of the integer-valued float latent @p l stands for.
template <class L>
inline L int_float_from_latent(L l) {
  using FB = FloatBits<L>;
  const bool negative = l < kMid<L>;
  const L abs_int = negative ? static_cast<L>(kMid<L> - 1 - l) : static_cast<L>(l - kMid<L>);
  constexpr L kGpi = static_cast<L>(L{1} << FB::kMantissaDigits);
  const L abs_bits = abs_int < kGpi ? FB::from_int(abs_int)
                                    : static_cast<L>(FB::from_int(kGpi) + (abs_int - kGpi));
  return negative ? static_cast<L>(abs_bits ^ kMid<L>) : abs_bits;
}

/// The mode-dependent part of a chunk the join needs, typed.
template <class L>
struct ModeParams {
  ModeKind mode = ModeKind::classic;
  L base = 0;      ///< IntMult: the base; FloatMult: the base's float bits
  uint32_t k = 0;  ///< FloatQuant
  const L* dict = nullptr;
  size_t dict_len = 0;
};

/// Joins @p n latents into number bits @p out.
/// @return false when a Dict index is out of range (corrupt).
template <class L, NumKind K>
bool join_latents(const ModeParams<L>& p, const L* l0, const uint32_t* dict_idx, const L* l1,
                  L* out, size_t n) {
  switch (p.mode) {
    case ModeKind::classic:
      for (size_t i = 0; i < n; ++i) out[i] = number_bits<L, K>(l0[i]);
      return true;
    case ModeKind::int_mult:
      for (size_t i = 0; i < n; ++i) out[i] = number_bits<L, K>(wadd(wmul(l0[i], p.base), l1[i]));
      return true;
    case ModeKind::float_mult:
      if constexpr (K == NumKind::floating) {
        for (size_t i = 0; i < n; ++i) {
          const L unadjusted = FloatBits<L>::mul(int_float_from_latent(l0[i]), p.base);
          out[i] = number_bits<L, K>(wadd(wadd(float_latent(unadjusted), l1[i]), kMid<L>));
        }
        return true;
      } else {
        return false;  // chunk_meta.cpp rejects float modes for integers
      }
    case ModeKind::float_quant: {
      const L cutoff = static_cast<L>(kMid<L> >> p.k);
      const auto low_max = static_cast<L>((Wide<L>{1} << p.k) - 1);
      for (size_t i = 0; i < n; ++i) {
        const L y = l0[i];
        const L low = y >= cutoff ? l1[i] : static_cast<L>(Wide<L>(low_max) - Wide<L>(l1[i]));
        out[i] = number_bits<L, K>(wadd(static_cast<L>(Wide<L>(y) << p.k), low));
      }
      return true;
    }
    case ModeKind::dict:
      for (size_t i = 0; i < n; ++i) {
        if (dict_idx[i] >= p.dict_len) return false;
        out[i] = number_bits<L, K>(p.dict[dict_idx[i]]);
      }
      return true;
  }
  return false;
}

}  // namespace oc::format::pcodec::detail
