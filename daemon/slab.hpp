// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief Client slabs: sealed memfds a client maps once, and record batches laid out in them.
///
/// Each connection gets its own slabs (never shared between clients, so a client only ever
/// sees its own batches' bytes). The daemon maps a slab read-write, then seals it so that the
/// client can map it read-only and nobody can shrink it under the daemon's mapping. A batch is
/// placed in a free range of a slab (daemon/ranges.hpp); the copy of its decoded buffers into
/// that range is the one copy a batch costs, and runs on a worker.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "config/error.hpp"
#include "daemon/protocol_generated.h"
#include "daemon/ranges.hpp"
#include "format/column.hpp"

namespace oc::daemon {

/// One node of the batch's pre-order Arrow array tree (protocol.fbs `ArrayNode`); buffer
/// offsets are relative to the start of the batch's range.
struct SlabArray {
  int64_t length = 0, null_count = 0, offset = 0;
  std::vector<fbs::BufferRef> buffers;
  uint32_t n_children = 0;
};

/// A decoded batch laid out for one range: each buffer 64-byte aligned from the range's start
/// (or, settled in place, where it lies; daemon/slab_arena.hpp).
struct BatchLayout {
  uint64_t bytes = 0;  ///< the range it needs
  /// The bytes it keeps from other batches: its buffers', each rounded up to 64 (what the
  /// per-client limits count; the range of a batch settled in place may span others' bytes).
  uint64_t pinned = 0;
  uint64_t rows = 0;
  std::vector<SlabArray> arrays;
  /// The buffer behind each of the arrays' `buffers`, in order (null: an absent validity).
  std::vector<const format::Buffer*> sources;
  /// The decoded batch, kept alive until `copy_batch`, and where each non-empty buffer goes.
  format::ColumnPtr batch;
  std::vector<std::pair<uint64_t, const format::Buffer*>> copies;
};

/// Lays @p batch out to be copied into one range; cheap (no copy).
[[nodiscard]] BatchLayout lay_out(format::ColumnPtr batch);

/// Copies @p layout's buffers to @p dst (its range, at least `layout.bytes` long), then drops
/// the decoded batch. Alignment padding is left as it was.
/// @return the bytes copied (buffers, without padding).
uint64_t copy_batch(BatchLayout& layout, uint8_t* dst);

/// One slab: a memfd mapped read-write here, sealed with F_SEAL_SHRINK, F_SEAL_GROW,
/// F_SEAL_FUTURE_WRITE and F_SEAL_SEAL.
/// @note The seals let a client map it read-only only, and keep it from truncating or punching
///       holes, so the daemon's mapping can never fault (SIGBUS). Its ranges are handed out and
///       taken back from any thread (the loop places copied batches, decoders allocate in it
///       through the session's `SlabArena`); a range is written only by whoever allocated it,
///       and only before it is handed to the client.
class Slab {
 public:
  /// Creates a slab of at least @p bytes: hugepages (MFD_HUGETLB, @p bytes rounded up to 2 MiB)
  /// when the kernel has them to spare, else normal pages.
  /// @param dedicated whether the slab holds a single batch (one larger than the slab size).
  [[nodiscard]] static Result<std::shared_ptr<Slab>> create(uint64_t id, uint64_t bytes,
                                                            bool dedicated);
  ~Slab();
  Slab(const Slab&) = delete;
  Slab& operator=(const Slab&) = delete;

  [[nodiscard]] uint64_t id() const noexcept { return id_; }
  /// The memfd, until `close_fd`; -1 after.
  [[nodiscard]] int fd() const noexcept { return fd_; }
  /// Closes the memfd once it has been sent: the daemon's mapping keeps the slab, and a
  /// descriptor less is held per slab.
  void close_fd() noexcept;
  /// @return the most memory `create(bytes)` takes (its rounding up to a hugepage included), for
  ///         checks against the pool's limits before making one.
  [[nodiscard]] static uint64_t footprint(uint64_t bytes) noexcept;
  /// Slab descriptors open in this process, every slab's.
  [[nodiscard]] static uint64_t open_fds() noexcept;
  [[nodiscard]] uint64_t bytes() const noexcept { return bytes_; }
  [[nodiscard]] uint8_t* base() const noexcept { return base_; }
  [[nodiscard]] bool hugepages() const noexcept { return hugepages_; }
  [[nodiscard]] bool dedicated() const noexcept { return dedicated_; }

  /// `RangeAllocator::allocate` of this slab's ranges, thread-safe.
  [[nodiscard]] std::optional<uint64_t> allocate(uint64_t bytes);
  /// `RangeAllocator::free`, thread-safe.
  bool free(uint64_t offset);
  [[nodiscard]] uint64_t used() const;
  [[nodiscard]] bool empty() const { return used() == 0; }

  bool sent = false;  ///< its descriptor went to the client (`SlabAdded`)

 private:
  Slab(uint64_t id, int fd, uint64_t bytes, uint8_t* base, bool hugepages, bool dedicated);

  mutable std::mutex mu_;
  RangeAllocator ranges_;
  uint64_t id_;
  int fd_;
  uint64_t bytes_;
  uint8_t* base_;
  bool hugepages_, dedicated_;
};

}  // namespace oc::daemon
