// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief First-fit allocation of 64-byte-aligned ranges inside one slab.
///
/// Each client slab (daemon/slab.hpp) hands out one range per batch and takes it back on
/// `Release`. Ranges are never shared: a range is free only between its `free` and the next
/// `allocate` that returns it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>

namespace oc::daemon {

/// Range alignment: Arrow's recommended buffer alignment, and a cache line.
inline constexpr uint64_t kRangeAlign = 64;

/// @p bytes rounded up to kRangeAlign; the caller keeps @p bytes below 2^64 - 64.
[[nodiscard]] constexpr uint64_t range_aligned(uint64_t bytes) noexcept {
  return (bytes + kRangeAlign - 1) & ~(kRangeAlign - 1);
}

class RangeAllocator {
 public:
  /// Manages [0, @p capacity); @p capacity is rounded down to kRangeAlign.
  explicit RangeAllocator(uint64_t capacity);

  /// @return the offset of the lowest free range of at least @p bytes (rounded up to
  ///         kRangeAlign; 0 bytes take kRangeAlign), or nullopt when none is large enough.
  [[nodiscard]] std::optional<uint64_t> allocate(uint64_t bytes);
  /// Frees the range that `allocate` returned at @p offset, merging it with free neighbours.
  /// @return false (and changes nothing) when no allocated range starts at @p offset.
  bool free(uint64_t offset);

  [[nodiscard]] uint64_t capacity() const noexcept { return capacity_; }
  /// Bytes in allocated ranges (rounded sizes).
  [[nodiscard]] uint64_t used() const noexcept { return used_; }
  [[nodiscard]] bool empty() const noexcept { return used_ == 0; }

 private:
  uint64_t capacity_;
  uint64_t used_ = 0;
  std::map<uint64_t, uint64_t> free_;         // offset -> length, never adjacent
  std::map<uint64_t, uint64_t> used_ranges_;  // offset -> length
};

}  // namespace oc::daemon
