// SPDX-License-Identifier: Apache-2.0
#include "daemon/kept_files.hpp"

#include <time.h>

#include <algorithm>
#include <utility>

namespace oc::daemon {

KeptFileKey KeptFileKey::of(const struct stat& st, std::string path) {
  constexpr int64_t kNs = 1'000'000'000;
  return KeptFileKey{std::move(path),
                     st.st_dev,
                     st.st_ino,
                     st.st_size,
                     static_cast<int64_t>(st.st_mtim.tv_sec) * kNs + st.st_mtim.tv_nsec,
                     static_cast<int64_t>(st.st_ctim.tv_sec) * kNs + st.st_ctim.tv_nsec};
}

int64_t wall_clock_ns() noexcept {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

std::shared_ptr<format::VortexFile> KeptFiles::find(const KeptFileKey& key) {
  std::lock_guard lock(mu_);
  auto it = by_key_.find(key);
  if (it == by_key_.end()) return nullptr;
  lru_.splice(lru_.begin(), lru_, it->second);
  hits_.fetch_add(1, std::memory_order_relaxed);
  return it->second->second;
}

void KeptFiles::keep(const KeptFileKey& key, std::shared_ptr<format::VortexFile> file,
                     int64_t now_ns) {
  constexpr int64_t kRacyNs = 2'000'000'000;
  if (capacity_ == 0 || now_ns - std::max(key.modified_ns, key.changed_ns) < kRacyNs) return;
  std::shared_ptr<format::VortexFile> dropped;  // closed outside the lock
  std::lock_guard lock(mu_);
  if (auto it = by_key_.find(key); it != by_key_.end()) {  // two opens raced: keep the later
    dropped = std::exchange(it->second->second, std::move(file));
    lru_.splice(lru_.begin(), lru_, it->second);
    return;
  }
  lru_.emplace_front(key, std::move(file));
  by_key_.emplace(key, lru_.begin());
  if (lru_.size() > capacity_) {
    by_key_.erase(lru_.back().first);
    dropped = std::move(lru_.back().second);
    lru_.pop_back();
  }
}

void KeptFiles::clear() {
  decltype(lru_) dropped;
  std::lock_guard lock(mu_);
  by_key_.clear();
  dropped.swap(lru_);
}

size_t KeptFiles::size() const {
  std::lock_guard lock(mu_);
  return lru_.size();
}

}  // namespace oc::daemon
