// SPDX-License-Identifier: Apache-2.0
#include "format/metadata_cache.hpp"

#include <unistd.h>

#include "config/defaults.hpp"

namespace oc::format {
namespace {

// What an entry costs besides its footer bytes: the parsed layout tree, specs and statistics,
// which are of the order of the footer's own size.
constexpr uint64_t kEntryOverhead = 1024;

std::string key_of(const std::string& object, const std::string& version) {
  return object + '\0' + version;
}

}  // namespace

MetadataCache& MetadataCache::process() {
  // As ByteCache::process: a forked child makes its own.
  static std::mutex made_mu;
  static MetadataCache* cache = nullptr;
  static pid_t owner = 0;
  std::lock_guard lock(made_mu);
  if (cache == nullptr || owner != ::getpid()) {
    cache = new MetadataCache(defaults().metadata_cache_bytes);  // never freed, as ByteCache's
    owner = ::getpid();
  }
  return *cache;
}

std::optional<Footer> MetadataCache::find(const std::string& object, const std::string& version) {
  std::lock_guard lock(mu_);
  auto it = entries_.find(key_of(object, version));
  if (it == entries_.end()) {
    ++counts_.misses;
    return std::nullopt;
  }
  ++counts_.hits;
  lru_.splice(lru_.begin(), lru_, it->second.lru);
  return *it->second.footer;
}

void MetadataCache::keep(const std::string& object, const std::string& version,
                         const Footer& footer) {
  const uint64_t bytes = footer.tail.size() + kEntryOverhead;
  if (bytes > limit_ || version.empty()) return;
  // The tail may be a lease of the pinned pool (or a client's slab): the cache's copy belongs
  // to no reader, so that keeping it holds none of their memory.
  Footer kept = footer;
  {
    ArenaScope heap(nullptr);
    kept.tail = Buffer::copy_of(footer.tail.span());
  }
  std::lock_guard lock(mu_);
  const std::string key = key_of(object, version);
  if (entries_.count(key)) return;
  while (!lru_.empty() && counts_.bytes + bytes > limit_) {
    auto victim = entries_.find(lru_.back());
    counts_.bytes -= victim->second.bytes;
    entries_.erase(victim);
    lru_.pop_back();
    ++counts_.evictions;
  }
  lru_.push_front(key);
  entries_[key] = Entry{std::make_shared<const Footer>(std::move(kept)), bytes, lru_.begin()};
  counts_.bytes += bytes;
}

MetadataCacheStats MetadataCache::stats() const {
  std::lock_guard lock(mu_);
  MetadataCacheStats s = counts_;
  s.entries = entries_.size();
  s.limit = limit_;
  return s;
}

uint64_t MetadataCache::clear() {
  std::lock_guard lock(mu_);
  const uint64_t dropped = counts_.bytes;
  entries_.clear();
  lru_.clear();
  counts_ = MetadataCacheStats{};
  return dropped;
}

}  // namespace oc::format
