// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief Byte sources for Vortex files: batched, coalesced, asynchronous ranged reads.
///
/// A `SegmentSource` serves byte ranges of one file. Readers hand it a batch of ranges; the
/// source merges ranges that are close (`CoalesceOptions`), issues the merged reads concurrently
/// and returns one `Buffer` per requested range, each a slice of a merged read (no copy).
///
/// Every store's source is the same walk (`coalesced_source`: check the ranges, merge them, read
/// the merged ranges, slice, count) over a small per-store `RangeReader` that reads merged
/// ranges: a local file submits them to the thread's io_uring at once (here), S3 and http(s)
/// fetch them into the pinned pool (net/s3_source.cpp), RADOS reads them from the OSDs
/// (net/rados.cpp). Between the walk and the readers sits the node's byte cache, for readers
/// that name a version of their object (format/byte_cache.hpp): the walk merges and reads only
/// the ranges the cache does not hold.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "config/error.hpp"
#include "config/fd.hpp"
#include "format/buffer.hpp"

namespace oc::format {

struct ByteRange {
  uint64_t offset = 0;
  uint64_t length = 0;
  [[nodiscard]] uint64_t end() const noexcept { return offset + length; }
};

/// When two ranges may be served by one read.
struct CoalesceOptions {
  uint64_t max_gap = 0;   ///< merge ranges separated by at most this many bytes
  uint64_t max_read = 0;  ///< never grow a merged read past this size (a single larger range
                          ///< is still read whole)
  /// Vortex's local-file defaults (knobs file_coalesce_distance / file_coalesce_max).
  [[nodiscard]] static CoalesceOptions local_file();
  /// Vortex's object-store defaults (knobs object_coalesce_distance / object_coalesce_max).
  [[nodiscard]] static CoalesceOptions object_store();
};

/// A merged read and the requested ranges it serves.
struct CoalescedRead {
  ByteRange range;
  std::vector<size_t> members;  ///< indices into the request batch
};

/// Plans merged reads for @p ranges (any order, overlaps and duplicates allowed).
[[nodiscard]] std::vector<CoalescedRead> coalesce(std::span<const ByteRange> ranges,
                                                  const CoalesceOptions& opts);

/// Counters a source keeps, for `onecopy scan --explain` and tests.
struct SourceStats {
  uint64_t requests = 0;    ///< ranges asked for
  uint64_t reads = 0;       ///< merged reads issued
  uint64_t bytes_read = 0;  ///< bytes transferred, including merged gaps
};

/// A file-like object that serves byte ranges.
class SegmentSource {
 public:
  virtual ~SegmentSource() = default;
  /// @return the total size of the object in bytes.
  [[nodiscard]] virtual uint64_t size() const = 0;
  /// Reads every range in @p ranges; result i holds exactly ranges[i].length bytes.
  /// Ranges past the end are `Errc::corrupt` (a file that points outside itself).
  [[nodiscard]] virtual Result<std::vector<Buffer>> read(std::span<const ByteRange> ranges) = 0;
  /// `read`, merging ranges by @p opts instead of the source's own options: a take reading
  /// segments in part merges only ranges whose gap is not worth a read of its own. Sources
  /// that coalesce nothing (memory, test doubles) keep the default, which is `read`.
  [[nodiscard]] virtual Result<std::vector<Buffer>> read_coalesced(
      std::span<const ByteRange> ranges, const CoalesceOptions& opts) {
    (void)opts;
    return read(ranges);
  }
  /// Reads ranges[i] into dsts[i] (exactly ranges[i].length bytes there), merging none of them:
  /// for a caller that merged its ranges itself and owns the memory they land in (a take's
  /// partial segments, format/partial_segment.hpp), so that a local file's bytes arrive in
  /// place, not through a buffer and a copy. Ranges past the end are `Errc::corrupt`; as many
  /// places as ranges, else `Errc::invalid`.
  [[nodiscard]] Result<void> read_into(std::span<const ByteRange> ranges,
                                       std::span<uint8_t* const> dsts);
  /// @return a name for messages (path or URL).
  [[nodiscard]] virtual const std::string& name() const = 0;
  [[nodiscard]] virtual SourceStats stats() const = 0;
  /// Whether a read is served on this machine (a local file through the page cache, memory):
  /// then a read costs a copy rather than a round trip, and a gap is worth merging only within
  /// a page. Sources that cannot tell say false.
  [[nodiscard]] virtual bool local() const { return false; }

 protected:
  /// `read_into` with as many places as ranges. The default reads through `read` and copies.
  [[nodiscard]] virtual Result<void> read_each_into(std::span<const ByteRange> ranges,
                                                    std::span<uint8_t* const> dsts);
};

/// One store's reads of one object: what `coalesced_source` needs besides the walk.
class RangeReader {
 public:
  /// What a source says of the object it reads, for the walk's checks and messages.
  struct Identity {
    uint64_t size = 0;           ///< bytes
    std::string name;            ///< a path or URL
    std::string_view kind;       ///< "file" or "object"
    CoalesceOptions coalescing;  ///< how a plain read merges ranges (the store's knobs)
    /// What the store calls this state of the object (S3's ETag), which every read is pinned
    /// to: the walk keeps the bytes it reads in the process's byte cache
    /// (format/byte_cache.hpp) under it. Empty: nothing is kept (local files, whose bytes the
    /// page cache keeps).
    std::string version = {};
  };
  explicit RangeReader(Identity identity) : identity_(std::move(identity)) {}
  virtual ~RangeReader() = default;
  [[nodiscard]] const Identity& identity() const noexcept { return identity_; }
  /// Reads every range of @p reads (merged ranges, each within the size); result k holds
  /// exactly reads[k].length bytes.
  [[nodiscard]] virtual Result<std::vector<Buffer>> read_merged(
      std::span<const ByteRange> reads) = 0;
  /// Reads every range of @p reads (each within the size) into dsts[k]. The default reads
  /// through `read_merged` and copies; a store that reads into given memory overrides it.
  [[nodiscard]] virtual Result<void> read_merged_into(std::span<const ByteRange> reads,
                                                      std::span<uint8_t* const> dsts);

 private:
  Identity identity_;
};

/// A SegmentSource over @p reader: every batch of ranges is checked against the size
/// (`corrupt`, naming the range, past the end), merged (`coalesce`, with the reader's options or
/// those `read_coalesced` passes), read by the reader as merged ranges and handed out as slices
/// of them, and counted in its stats.
[[nodiscard]] std::shared_ptr<SegmentSource> coalesced_source(std::unique_ptr<RangeReader> reader);

/// Opens @p path for reading the way every local read in onecopy does: without blocking
/// (O_NONBLOCK, so a FIFO with no writer is refused at once, not waited on) and checked to be a
/// regular file. `denied` when the caller may not read it, `not_found` when it is missing,
/// `invalid` for a directory, FIFO, device or socket. The client library passes the result to
/// onecopyd, which reads through the descriptor with the client's permissions.
[[nodiscard]] Result<UniqueFd> open_readable_file(const std::string& path);

/// Opens a local file. Reads go through io_uring when the kernel allows it, else pread(2).
/// The open does not block (O_NONBLOCK), so a FIFO with no writer is refused at once: anything
/// but a regular file is `invalid`, naming what it is.
[[nodiscard]] Result<std::shared_ptr<SegmentSource>> open_local_file(const std::string& path);

/// Reads through @p fd, a descriptor opened by someone else (onecopyd reads the files its
/// clients open and pass to it), named @p name in messages. Takes ownership of @p fd, which is
/// closed on failure too. `invalid` unless @p fd is a regular file open for reading (not
/// O_PATH, not write-only): a FIFO, device, socket or directory is refused before any read.
[[nodiscard]] Result<std::shared_ptr<SegmentSource>> open_local_fd(int fd, std::string name);

/// The status of @p fd when it is what `open_local_fd` accepts (a regular file open for
/// reading), else its error, naming @p name; @p fd stays open either way.
[[nodiscard]] Result<struct stat> readable_fd_status(int fd, const std::string& name);

/// @return how many local-file sources (each holding one descriptor) exist in this process.
[[nodiscard]] uint64_t open_local_sources() noexcept;

/// @return how many io_uring rings (a descriptor each) local reads hold: one per thread that
/// has read a local file, shared by every file it reads.
[[nodiscard]] uint64_t open_read_rings() noexcept;

/// Serves bytes held in memory (tests, fuzzing, small embedded files).
[[nodiscard]] std::shared_ptr<SegmentSource> memory_source(Buffer bytes,
                                                           std::string name = "memory");

}  // namespace oc::format
