// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief `PartialSegment`: a flat segment of which only some byte ranges have been read.
///
/// A take of a few rows needs a few bytes of each segment it touches: the array tree at the
/// segment's end, then the rows' values (one value of a primitive, one FastLanes block of a
/// bitpacked array, one view of a string and that string's bytes). A partial segment is the
/// segment's address range, reserved whole (an anonymous mapping: pages nobody fills cost no
/// memory and read as zeros), into which only the ranges that decoders ask for through
/// `DecodeContext::need` are read: straight into place from a local file, copied in from a store.
///
/// Reading happens in rounds, driven by `VortexFile::take`: every reader runs its take, the ranges
/// it needed and did not have are recorded as pending instead of read one by one, then all
/// pending ranges of every segment are fetched as one coalesced batch and the takes run again.
/// A take that ran on bytes not yet read (zeros) is thrown away; decoders must already be safe on
/// any bytes, since a file may hold any. The round in which nothing was pending is the result.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "config/error.hpp"
#include "format/buffer.hpp"
#include "format/segment_source.hpp"

namespace oc::format {

class PartialSegment : public std::enable_shared_from_this<PartialSegment> {
 public:
  /// Reserves the address range of the segment at file bytes @p range (length > 0); nothing is
  /// read yet. `out_of_memory` when the mapping fails.
  [[nodiscard]] static Result<std::shared_ptr<PartialSegment>> reserve(ByteRange range);
  ~PartialSegment();
  PartialSegment(const PartialSegment&) = delete;
  PartialSegment& operator=(const PartialSegment&) = delete;

  /// The whole segment as one buffer (its owner keeps the mapping); bytes not read are zeros.
  [[nodiscard]] Buffer bytes() const;
  /// The segment's first byte (for telling which buffers are slices of it).
  [[nodiscard]] const uint8_t* data() const noexcept { return base_; }
  [[nodiscard]] const ByteRange& range() const noexcept { return range_; }

  /// @return true when segment bytes [offset, offset + length) (within the segment) have all
  /// been read; otherwise records the missing ones as pending and returns false.
  bool need(uint64_t offset, uint64_t length);
  /// Whether anything was recorded as pending since the last `take_pending`.
  [[nodiscard]] bool has_pending() const;
  /// @return the pending ranges in file offsets, sorted and merged, and forgets them.
  [[nodiscard]] std::vector<ByteRange> take_pending();
  /// Copies @p bytes, read from file offset @p file_offset (inside the segment), into place
  /// and marks them read.
  void fill(uint64_t file_offset, std::span<const uint8_t> bytes);
  /// Where the byte at file offset @p file_offset (inside the segment) lives: a source that
  /// reads into place (a local file) reads a range there, then the caller calls `mark_read`.
  /// Only between rounds, while no decoder reads the segment.
  [[nodiscard]] uint8_t* destination(uint64_t file_offset) const noexcept {
    return base_ + (file_offset - range_.offset);
  }
  /// Marks file bytes [file_offset, file_offset + length) (inside the segment), already in
  /// place, as read.
  void mark_read(uint64_t file_offset, uint64_t length);
  /// Bytes of the segment read so far.
  [[nodiscard]] uint64_t bytes_resident() const;
  /// Memory those bytes occupy: every page of the mapping they touch, whole.
  [[nodiscard]] uint64_t memory_resident() const;

 private:
  PartialSegment(ByteRange range, uint8_t* base) : range_(range), base_(base) {}

  const ByteRange range_;
  uint8_t* const base_;
  mutable std::mutex mu_;
  std::map<uint64_t, uint64_t> resident_;  // begin -> end, disjoint, not touching
  std::vector<ByteRange> pending_;         // segment offsets
};

}  // namespace oc::format
