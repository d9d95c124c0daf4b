// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief Fuzzing entry points: whole-library operations over untrusted bytes.
///
/// The libFuzzer targets in tests/fuzz/ are thin shims over these, and crash inputs found by them
/// are replayed through the same functions by Catch2 tests (tests/format/test_corrupt_files.cpp).
/// Each returns the first error, if any, and never crashes, hangs or exhausts memory on any input.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "config/error.hpp"

namespace oc::format {

/// Opens @p bytes as a Vortex file and scans every column to the end.
[[nodiscard]] Result<void> fuzz_open_scan(std::span<const uint8_t> bytes);

/// Opens @p bytes as a Vortex file and takes a few rows of every column: the first, the last,
/// the middle and a spread that @p bytes' own length picks, unsorted and repeated.
[[nodiscard]] Result<void> fuzz_take(std::span<const uint8_t> bytes);

/// Opens @p file (a valid file, normally) and scans it to the end with @p predicate as the SQL
/// filter: the parser, the binder, pruning and the evaluators over real columns.
[[nodiscard]] Result<void> fuzz_filtered_scan(std::span<const uint8_t> file,
                                              std::string_view predicate);

/// Runs the object class's method body on @p request (untrusted bytes, as an OSD receives them)
/// over @p file (a valid file, normally): the request's decode, then, when it decodes, the scan
/// it asks for to an Arrow IPC stream under a 4 MiB cap. The request's `file_size` is taken as
/// @p file's size, so that mutations reach the scan rather than stop at the size check.
[[nodiscard]] Result<void> fuzz_pushdown(std::span<const uint8_t> file,
                                         std::span<const uint8_t> request);

}  // namespace oc::format
