// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief The ALP (Adaptive Lossless floating-Point) decode formula, shared by the CPU decoder
/// (format/encodings/alp.cpp) and GPU kernels.
///
/// ALP stores each float as an integer `encoded` with two exponents `e` and `f` chosen per array.
/// A value decodes as
///
///     (Float)encoded * kF10[f] * kIF10[e]
///
/// evaluated left to right in the float's own precision: first the integer-to-float conversion
/// (round to nearest), then the multiplication by 10^f, then by 10^-e. The writer checks that this
/// exact expression reproduces each value bit for bit and stores every value for which it does
/// not as a patch, so any other order or precision (a fused multiply-add, 10^(f-e) in one factor,
/// double arithmetic for f32) silently changes results.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define OC_ALP_HOST_DEVICE __host__ __device__
#else
#define OC_ALP_HOST_DEVICE
#endif

namespace oc::format::alp {

/// Largest exponent a writer may choose: 10 for f32 (i32 encoded), 18 for f64 (i64 encoded).
template <class Float>
inline constexpr uint8_t kMaxExponent = sizeof(Float) == 4 ? 10 : 18;

/// The signed integer type that holds encoded values of @p Float.
template <class Float>
struct EncodedInt;
template <>
struct EncodedInt<float> {
  using type = int32_t;
};
template <>
struct EncodedInt<double> {
  using type = int64_t;
};

/// Powers of ten 10^0 .. 10^n and their inverses 10^-0 .. 10^-n (n = 10 for f32, 23 for f64), each
/// the nearest value of its type to the decimal literal (written per type, so f32 entries are
/// not double values rounded a second time, and inverses are not 1 / 10^i computed at run time).
template <class Float>
struct Powers;
template <>
struct Powers<float> {
  static constexpr float kF10[11] = {1e0f, 1e1f, 1e2f, 1e3f, 1e4f, 1e5f,
                                     1e6f, 1e7f, 1e8f, 1e9f, 1e10f};
  static constexpr float kIF10[11] = {1e-0f, 1e-1f, 1e-2f, 1e-3f, 1e-4f, 1e-5f,
                                      1e-6f, 1e-7f, 1e-8f, 1e-9f, 1e-10f};
};
template <>
struct Powers<double> {
  static constexpr double kF10[24] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                      1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                      1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22, 1e23};
  static constexpr double kIF10[24] = {1e-0,  1e-1,  1e-2,  1e-3,  1e-4,  1e-5,  1e-6,  1e-7,
                                       1e-8,  1e-9,  1e-10, 1e-11, 1e-12, 1e-13, 1e-14, 1e-15,
                                       1e-16, 1e-17, 1e-18, 1e-19, 1e-20, 1e-21, 1e-22, 1e-23};
};

/// Decodes one value given the array's two factors `kF10[f]` and `kIF10[e]`, looked up once per
/// array (a kernel receives them as arguments).
template <class Float, class Int>
OC_ALP_HOST_DEVICE constexpr Float decode_value(Int encoded, Float f10, Float if10) {
  return static_cast<Float>(encoded) * f10 * if10;
}

/// Decodes one value of an array with exponents @p e and @p f (both <= kMaxExponent<Float>).
template <class Float>
constexpr Float decode_with_exponents(typename EncodedInt<Float>::type encoded, uint8_t e,
                                      uint8_t f) {
  return decode_value<Float>(encoded, Powers<Float>::kF10[f], Powers<Float>::kIF10[e]);
}

}  // namespace oc::format::alp
