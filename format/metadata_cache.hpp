// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief The process's metadata cache: the parsed footers (schema, layout tree, statistics,
/// segment map) of remote objects, keyed by (object, version), so that opening a file a scan or
/// plan has opened before costs no read of its footer. In onecopyd it serves every client.
///
/// As with the byte cache (format/byte_cache.hpp), a version is one state of an object (S3's
/// ETag), so a changed object is a new key and never meets a stale footer; and the cache is
/// asked only once an opener has been allowed to open the object. Bounded by
/// `metadata_cache_bytes` (the footers' bytes), least recently used out first.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "format/footer.hpp"

namespace oc::format {

struct MetadataCacheStats {
  uint64_t hits = 0, misses = 0, evictions = 0;
  uint64_t bytes = 0, entries = 0, limit = 0;
};

class MetadataCache {
 public:
  explicit MetadataCache(uint64_t limit_bytes) : limit_(limit_bytes) {}
  /// The process's cache, sized by the metadata_cache_bytes knob at first use.
  [[nodiscard]] static MetadataCache& process();

  /// The footer of version @p version of @p object, when kept (counted as a hit or a miss).
  [[nodiscard]] std::optional<Footer> find(const std::string& object, const std::string& version);
  /// Keeps @p footer (a copy sharing its buffers) unless it is larger than the whole cache.
  void keep(const std::string& object, const std::string& version, const Footer& footer);
  [[nodiscard]] MetadataCacheStats stats() const;
  /// Drops every entry; @return the bytes they held.
  uint64_t clear();

 private:
  struct Entry {
    std::shared_ptr<const Footer> footer;
    uint64_t bytes = 0;
    std::list<std::string>::iterator lru;
  };
  const uint64_t limit_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Entry> entries_;
  std::list<std::string> lru_;  // most recent first
  MetadataCacheStats counts_;
};

}  // namespace oc::format
