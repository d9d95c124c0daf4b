// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief The node's byte cache: bytes of objects in remote stores, kept in memory and, when a
/// directory is given, on a local disk, keyed by (object, version, byte range), for every scan of
/// the process: in onecopyd, every rank, worker and job of the node.
///
/// It sits in the source layer's walk (format/segment_source.hpp `coalesced_source`), below
/// every decision of who may read what: a source exists only once its opener was allowed to
/// open the object, so a cached byte only ever reaches a reader that could read it from the
/// store. A version is what the store says of one state of the object (S3's ETag): an object
/// that changes has a new version and so new keys, and nothing is ever served stale. Sources
/// without a version (local files, http(s) URLs: net/s3_source.hpp `cache_version`) bypass it.
///
/// - Single flight: ranges that another reader is fetching are waited for, not fetched again.
/// - Memory tier (`cache_memory_bytes`): least recently used out first; an entry a scan still
///   holds is pinned. A full tier never blocks or fails a read: what does not fit is not kept.
/// - Disk tier (`cache_dir`, `cache_disk_bytes`): one file per entry, written beside its name and
///   renamed into place, so a crash leaves no half entry under a valid name. Its layout:
///
///   | bytes | field                                                        |
///   |-------|--------------------------------------------------------------|
///   | 8     | magic "OCBCACHE"                                             |
///   | 4     | u32 LE layout version (1)                                    |
///   | 4     | u32 LE key length K                                          |
///   | 8     | u64 LE data length D                                         |
///   | 4     | u32 LE CRC-32C of the data                                   |
///   | 4     | u32 LE CRC-32C of the 28 bytes above and the key             |
///   | K     | the key: object, NUL, version, NUL, offset and length (text) |
///   | D     | the data                                                     |
///
///   Every read checks all of it; a file that fails is removed and the range read from the
///   store. At start the directory's entries are indexed (their headers checked) and leftovers
///   of interrupted writes removed; files of other names are left alone. A write that fails
///   (a full disk, an I/O error) turns the tier off, logged once and counted: reads go on.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "config/error.hpp"
#include "format/buffer.hpp"
#include "format/segment_source.hpp"

namespace oc::format {

/// What the cache did since the process started (or since `clear`), and what it holds now.
struct ByteCacheStats {
  uint64_t hits_memory = 0, hits_disk = 0, misses = 0, waits = 0;  ///< ranges asked for
  uint64_t bytes_from_memory = 0, bytes_from_disk = 0, bytes_from_store = 0;
  uint64_t evictions_memory = 0, evictions_disk = 0;
  uint64_t memory_bytes = 0, memory_limit = 0, disk_bytes = 0, disk_limit = 0;
  uint64_t entries_memory = 0, entries_disk = 0;
  uint64_t disk_dropped = 0;  ///< files removed for failing their checks
  uint64_t disk_errors = 0;   ///< write or read errors of the disk tier
  bool disk_on = false;       ///< a directory is set and no error has turned the tier off
};

class ByteCache {
 public:
  struct Options {
    uint64_t memory_bytes = 0;  ///< 0: no memory tier
    std::string dir;            ///< empty: no disk tier
    uint64_t disk_bytes = 0;
    /// Fault injection (tests): called before each disk write and read of an entry with
    /// "write" or "read"; a nonzero errno it returns fails that operation as the disk would.
    std::function<int(std::string_view op)> disk_fault = {};
  };
  /// Indexes @p options.dir (creating it when missing) when there is one.
  explicit ByteCache(Options options);
  /// Finishes the disk writes under way.
  ~ByteCache();
  ByteCache(const ByteCache&) = delete;
  ByteCache& operator=(const ByteCache&) = delete;

  /// The process's cache, made at first use from the cache_memory_bytes, cache_dir (else
  /// $CACHE_DIRECTORY, which systemd's CacheDirectory= sets) and cache_disk_bytes knobs.
  [[nodiscard]] static ByteCache& process();

  /// Reads from the store, given the ranges nobody holds or fetches: result i holds exactly
  /// ranges[i] (which lie within the object).
  using Fetch = std::function<Result<std::vector<Buffer>>(std::span<const ByteRange>)>;

  /// The bytes of @p ranges of version @p version of @p object: from memory, from disk, from a
  /// fetch another reader has under way, or from one call of @p fetch for the rest, which are
  /// then kept. Result i holds exactly ranges[i]. An error of @p fetch is this call's error.
  [[nodiscard]] Result<std::vector<Buffer>> read(const std::string& object,
                                                 const std::string& version,
                                                 std::span<const ByteRange> ranges,
                                                 const Fetch& fetch);

  /// @return whether either tier may keep anything (else `read` is only `fetch`).
  [[nodiscard]] bool enabled() const;
  [[nodiscard]] ByteCacheStats stats() const;
  /// Drops every entry of both tiers (files included) and zeroes the counters.
  void clear();
  /// Waits until the disk writes queued so far are done (tests, and before exit).
  void flush();

 private:
  struct Entry {
    Buffer bytes;
    std::list<std::string>::iterator lru;
  };
  struct DiskEntry {
    std::string file;
    uint64_t size = 0;
    std::list<std::string>::iterator lru;
  };
  struct Flight {
    bool done = false;
    bool ok = false;
    Buffer bytes;
  };
  struct Write {
    std::string key;
    Buffer bytes;
  };

  void index_disk();
  void keep_in_memory(const std::string& key, const Buffer& bytes);  // under mu_
  void evict_memory(uint64_t need);                                  // under mu_
  void evict_disk(uint64_t need);                                    // under mu_
  std::optional<Buffer> read_disk(const std::string& key, const std::string& file);
  void write_loop();
  void disk_failed(const std::string& what, int err);
  bool disk_on_now() const;
  std::string file_of(const std::string& key) const;

  Options options_;
  mutable std::mutex mu_;
  std::condition_variable landed_;  // a flight ended
  std::unordered_map<std::string, Entry> memory_;
  std::list<std::string> memory_lru_;  // most recent first
  std::unordered_map<std::string, DiskEntry> disk_;
  std::list<std::string> disk_lru_;
  std::unordered_map<std::string, std::shared_ptr<Flight>> flights_;
  uint64_t memory_bytes_ = 0, disk_bytes_ = 0;
  bool disk_on_ = false;
  ByteCacheStats counts_;
  // Disk writes, on a thread of their own so that no reader waits for them.
  std::mutex write_mu_;
  std::condition_variable write_cv_, written_;
  std::vector<Write> writes_;
  uint64_t write_queue_bytes_ = 0;
  bool writing_ = false, stopping_ = false;
  std::thread writer_;
};

}  // namespace oc::format
