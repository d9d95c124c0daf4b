// SPDX-License-Identifier: Apache-2.0
#include "daemon/ranges.hpp"

#include <iterator>

namespace oc::daemon {

RangeAllocator::RangeAllocator(uint64_t capacity) : capacity_(capacity & ~(kRangeAlign - 1)) {
  if (capacity_ > 0) free_[0] = capacity_;
}

std::optional<uint64_t> RangeAllocator::allocate(uint64_t bytes) {
  if (bytes > capacity_) return std::nullopt;  // also keeps the rounding below from overflowing
  const uint64_t len = bytes == 0 ? kRangeAlign : range_aligned(bytes);
  // First fit: the lowest-addressed hole that is large enough. Slabs hold a handful of batches,
  // so the linear walk is short, and low-first placement keeps the tail free for large batches.
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->second < len) continue;
    const uint64_t at = it->first, rest = it->second - len;
    free_.erase(it);
    if (rest > 0) free_[at + len] = rest;
    used_ranges_[at] = len;
    used_ += len;
    return at;
  }
  return std::nullopt;
}

bool RangeAllocator::free(uint64_t offset) {
  auto u = used_ranges_.find(offset);
  if (u == used_ranges_.end()) return false;
  uint64_t at = offset, len = u->second;
  used_ -= len;
  used_ranges_.erase(u);
  auto next = free_.lower_bound(at);
  if (next != free_.end() && next->first == at + len) {
    len += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == at) {
      prev->second += len;
      return true;
    }
  }
  free_[at] = len;
  return true;
}

}  // namespace oc::daemon
