// SPDX-License-Identifier: Apache-2.0
#include "format/take_cache.hpp"

#include <atomic>

#include "config/defaults.hpp"

namespace oc::format {

TakeCache& TakeCache::process() {
  // Never destroyed: files may close (and forget their segments) during static destruction.
  static auto* cache = new TakeCache();
  return *cache;
}

uint64_t TakeCache::new_file_id() noexcept {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

void TakeCache::drop(std::map<Key, Entry>::iterator it) {
  bytes_ -= it->second.bytes;
  lru_.erase(it->second.lru);
  entries_.erase(it);
}

PartialSegments TakeCache::check_out(uint64_t file, std::span<const uint32_t> ids) {
  PartialSegments out;
  std::lock_guard lock(mu_);
  for (uint32_t id : ids) {
    auto it = entries_.find({file, id});
    if (it == entries_.end()) continue;
    out.emplace(id, std::move(it->second.segment));
    drop(it);
  }
  return out;
}

void TakeCache::put_back(uint64_t file, PartialSegments segments) noexcept {
  const uint64_t budget = defaults().take_cache_bytes;
  std::lock_guard lock(mu_);
  for (auto& [id, segment] : segments) {
    try {
      (void)segment->take_pending();  // a failed take's unread ranges are not the next one's
      const uint64_t resident = segment->memory_resident();
      if (resident == 0 || resident > budget) continue;
      auto it = entries_.find({file, id});
      if (it != entries_.end()) {
        if (it->second.bytes >= resident) continue;
        drop(it);
      }
      lru_.push_back({file, id});
      try {
        entries_.emplace(Key{file, id}, Entry{segment, resident, std::prev(lru_.end())});
      } catch (...) {
        lru_.pop_back();
        throw;
      }
      bytes_ += resident;
    } catch (...) {
      // No memory to remember it: the next take reads it again.
    }
  }
  while (bytes_ > budget) drop(entries_.find(lru_.front()));
}

void TakeCache::forget(uint64_t file) noexcept {
  std::lock_guard lock(mu_);
  auto it = entries_.lower_bound({file, 0});
  while (it != entries_.end() && it->first.first == file) drop(it++);
}

uint64_t TakeCache::bytes() const {
  std::lock_guard lock(mu_);
  return bytes_;
}

}  // namespace oc::format
