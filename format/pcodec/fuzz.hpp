// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief The libFuzzer entry of format/pcodec (tests/fuzz/fuzz_pco.cpp is a shim over it).
#pragma once

#include <cstdint>
#include <span>

#include "config/error.hpp"

namespace oc::format::pcodec {

/// Decodes one chunk and its pages from @p input, laid out as (integers little endian):
///
///   [1] number type (Number's index, mod 11)   [1] format: even = 4.1, odd = 3
///   [2] meta length, meta bytes
///   then until the input ends: [2] n_values, [2] page length, page bytes
///
/// @return the first error, or ok; the fuzzer only cares that nothing crashes, leaks or reads
///         out of bounds. tests/format/golden/make_pco_golden.py --seeds writes seeds.
Result<void> fuzz_decode(std::span<const uint8_t> input);

}  // namespace oc::format::pcodec
