// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief Segments that takes read in part, kept for later takes of the same open file.
///
/// Random access comes in streams: a sampler takes rows of one file again and again. A take
/// reads the array trees and the byte ranges its rows need into partial segments
/// (format/partial_segment.hpp); at its end it hands them here, and the next take of the same
/// `VortexFile` starts from what they hold, reading only what is still missing (segments below
/// take_partial_segment_bytes, read whole, are read again: they are small). The process
/// keeps at most `take_cache_bytes` of memory in them in all (the pages their bytes touch,
/// whole: scattered rows touch a page each), dropping the least recently used segments first,
/// and a file's segments go when the file closes.
///
/// A take checks its segments out and owns them until it puts them back, so two takes never
/// share one: concurrent takes of one file each read what the other holds out.
#pragma once

#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <utility>

#include "format/partial_segment.hpp"

namespace oc::format {

/// Partial segments of one file by segment id.
using PartialSegments = std::map<uint32_t, std::shared_ptr<PartialSegment>>;

/// The process's cache of partial segments. Thread-safe.
class TakeCache {
 public:
  /// The one cache of the process, sized by the take_cache_bytes knob.
  [[nodiscard]] static TakeCache& process();

  /// A number naming an open file in the cache, unique in the process.
  [[nodiscard]] static uint64_t new_file_id() noexcept;

  /// Moves out the cached segments @p ids of file @p file, for a take's sole use.
  [[nodiscard]] PartialSegments check_out(uint64_t file, std::span<const uint32_t> ids);
  /// Takes back a take's segments of file @p file (their pending ranges dropped); one that
  /// another take put back meanwhile is kept if it holds more. Then drops the least recently
  /// used segments until at most take_cache_bytes are held. A segment it has no memory to keep
  /// is dropped: this runs as a take ends, on every path.
  void put_back(uint64_t file, PartialSegments segments) noexcept;
  /// Drops every segment of file @p file (it was closed).
  void forget(uint64_t file) noexcept;
  /// Memory the segments held occupy (PartialSegment::memory_resident: whole pages).
  [[nodiscard]] uint64_t bytes() const;

 private:
  using Key = std::pair<uint64_t, uint32_t>;  // file, segment
  struct Entry {
    std::shared_ptr<PartialSegment> segment;
    uint64_t bytes = 0;  // resident when it was put back
    std::list<Key>::iterator lru;
  };
  TakeCache() = default;
  // Drops the entry at @p it (under mu_).
  void drop(std::map<Key, Entry>::iterator it);

  mutable std::mutex mu_;
  std::map<Key, Entry> entries_;
  std::list<Key> lru_;  // least recently used first
  uint64_t bytes_ = 0;
};

}  // namespace oc::format
