// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief Fuzzing entry points: whole-library operations over untrusted bytes.
///
/// The libFuzzer targets in tests/fuzz/ are thin shims over these, and crash inputs found by them
/// are replayed through the same functions by Catch2 tests (tests/format/test_corrupt_files.cpp).
#pragma once

#include <cstdint>
#include <span>

#include "config/error.hpp"

namespace oc::format {

/// Opens @p bytes as a Vortex file and scans every column to the end.
/// @return the first error, if any; never crashes, hangs or exhausts memory on any input.
[[nodiscard]] Result<void> fuzz_open_scan(std::span<const uint8_t> bytes);

}  // namespace oc::format
