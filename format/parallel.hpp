// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief `parallel_for`: the one way decoding spreads work over threads, on one process pool.
///
/// The process owns one decode pool of `decode_threads() - 1` threads, started on first use
/// (and again in a forked child, which inherits no threads). `parallel_for` offers its items to
/// that pool and works on them itself, so the threads a process decodes with are bounded by the
/// pool plus its callers, however many batches, fields and strings decode at once. Calls nest
/// (fields of a batch, then slices of one string column) without deadlock: a caller only ever
/// waits for helpers that already run its items, never for one still queued.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

#include "config/error.hpp"

namespace oc::format {

/// Threads a decode may use: the `scan_decode_threads` knob, or one per core when it is 0.
[[nodiscard]] size_t decode_threads();

/// Decodes of fewer rows than this run on the calling thread: handing work over costs more.
inline constexpr uint64_t kParallelFromRows = 8192;

/// The rows a take of @p rows rows weighs for `parallel_for`: each taken row decodes about a
/// block of values (FastLanes packs 1,024), and the rounds of its reads cost more still.
[[nodiscard]] constexpr uint64_t take_weight(uint64_t rows) noexcept {
  constexpr uint64_t kBlock = 1024;
  return rows > UINT64_MAX / kBlock ? UINT64_MAX : rows * kBlock;
}

/// Runs @p item(0), ..., @p item(n - 1), each returning `Result<void>`, on the caller's thread
/// and the decode pool; with @p rows (the rows the work covers) below `kParallelFromRows`, on the
/// caller's thread alone. Returns when no item runs any more: the first error (items not yet
/// started are skipped once one fails), or success when all succeeded. An exception an item
/// throws (a failed allocation, say) is that item's error (`current_exception_error`); it never
/// ends the process. @p item must be safe to run concurrently.
[[nodiscard]] Result<void> parallel_for(size_t n, uint64_t rows,
                                        const std::function<Result<void>(size_t)>& item);

}  // namespace oc::format
