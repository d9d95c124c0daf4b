// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief Filters a decoded column on the device: predicate -> selection mask -> compaction
/// (cub::DeviceSelect::Flagged), queued on one stream with no host synchronization.
///
/// The compacted values are allocated at the column's full size, the exact upper bound, so no
/// count has to come back to the host before the output exists; the count stays on the device
/// until `FilteredColumn::count` reads it (one synchronization per filter, not per chunk).
/// Predicate semantics and byte layouts: kernels/filter_stages.hpp.
///
/// @note Untested on GPU hardware so far: onecopy-tests-gpu compares it with `select_on_host`.
#pragma once

#include <cstdint>
#include <vector>

#include "config/error.hpp"
#include "kernels/device_memory.hpp"
#include "kernels/filter_stages.hpp"

namespace oc::kernels {

/// The selection mask of @p n rows (host memory): the reference for the device.
/// @param values    n values of `p.value_bytes` bytes each.
/// @param validity  Arrow bitmap of the n rows (bit i = row i, LSB first); null: every row valid.
/// @return n flags, 1 where the row is valid and @p p holds (a null row is never selected);
/// `Errc::invalid` for a value width the filter lacks.
[[nodiscard]] Result<std::vector<uint8_t>> select_on_host(const Predicate& p, const void* values,
                                                          const uint8_t* validity, uint64_t n);

/// A filter's result on the device.
struct FilteredColumn {
  DeviceBuffer mask;      ///< n flags (1 = selected)
  DeviceBuffer values;    ///< the selected values first, in row order; room for all n
  DeviceBuffer selected;  ///< one u64: how many values were selected
  DeviceBuffer scratch;   ///< CUB's temporary storage, freed in stream order

  /// Waits for the filter on @p stream and returns the number of selected rows.
  [[nodiscard]] Result<uint64_t> count(Stream& stream);
};

/// Queues the filter of @p n rows on @p stream; null rows are never selected.
/// @param values    device address of n values of `p.value_bytes` bytes each.
/// @param validity  device address of the rows' Arrow bitmap (bit i = row i, LSB first), as
///                  `DeviceColumn::validity` holds it; null: every row valid.
[[nodiscard]] Result<FilteredColumn> filter_on_device(const Predicate& p, const void* values,
                                                      const uint8_t* validity, uint64_t n,
                                                      Stream& stream);

}  // namespace oc::kernels
