// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief fastlanes.for on the GPU: out[i] = encoded[i] + reference, wrapping like the CPU decoder.
#pragma once

#include <cstdint>
#include <span>

#include "config/error.hpp"

namespace oc::kernels {

/// Adds @p reference to every value of @p values in place, on device 0: copies in, launches one
/// grid-stride kernel, copies out. Integer types of 1 to 8 bytes wrap modulo 2^bits, bit-exact
/// with the CPU decoder.
/// @return `Errc::cuda` when no device exists or a CUDA call fails; @p values is unchanged then.
template <class T>
[[nodiscard]] Result<void> add_reference_on_device(std::span<T> values, T reference);

}  // namespace oc::kernels

/// Applies @p X to each type add_reference_on_device is instantiated for (by the CUDA and the
/// no-CUDA build alike).
#define OC_FOR_EACH_REFERENCE_TYPE(X) \
  X(int8_t) X(int16_t) X(int32_t) X(int64_t) X(uint8_t) X(uint16_t) X(uint32_t) X(uint64_t)
