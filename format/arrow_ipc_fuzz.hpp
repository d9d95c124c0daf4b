// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief The libFuzzer entry of the Arrow IPC stream reader (format/arrow_ipc_read.hpp);
/// tests/fuzz/fuzz_arrow_ipc_read.cpp is a shim over it.
#pragma once

#include <cstdint>
#include <span>

#include "config/error.hpp"
#include "format/dtype.hpp"

namespace oc::format {

/// The expected dtypes the fuzz entry reads streams as; between them every type the writer
/// writes (flat, nested, decimal and temporal).
[[nodiscard]] std::span<const DTypePtr> arrow_ipc_fuzz_dtypes();

/// Reads @p input, laid out as
///
///   [1] k: the expected dtype is arrow_ipc_fuzz_dtypes()[(k & 0x7f) % count], strings are
///          read as views when k & 0x80, else as offsets
///   then the Arrow IPC stream
///
/// and writes what it read back with `ArrowIpcWriter` and reads that again, so that every
/// byte of every accepted batch is touched.
/// @return the first error, or ok; the fuzzer only cares that nothing crashes, leaks or reads
///         out of bounds. tests/format/test_arrow_ipc_read.cpp writes the seeds
///         (tests/fuzz/seeds/arrow_ipc_read/) and replays them.
[[nodiscard]] Result<void> fuzz_read_arrow_ipc(std::span<const uint8_t> input);

}  // namespace oc::format
