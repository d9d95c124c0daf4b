// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief A client's slabs as the arena its batches are decoded into, and batches delivered
/// from where they were decoded.
///
/// While onecopyd decodes a client's scan, `Buffer::allocate` takes ranges of that client's
/// shared slabs (`format::ArenaScope`), so a decoder's output already lies where the client
/// maps it. A range goes back to its slab when its last owner drops it: the scan's readers
/// (a chunk decoded once serves several batches, a dictionary every batch) or the daemon's
/// lease of a batch sent over it, so no range is reused while a client may read it. Only
/// buffers decoded elsewhere are copied: the fetched bytes a batch keeps as they are (a
/// primitive column sliced from its segment, the one copy of the product), and decoder output
/// that found no room in a slab (counted as copied after decode).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "daemon/slab.hpp"
#include "format/buffer.hpp"

namespace oc::daemon {

/// One session's non-dedicated slabs, shared by its decode jobs. Thread-safe.
class SlabArena final : public format::BufferArena {
 public:
  /// Decoders may allocate in @p slab from now on (loop thread, as it makes the slab).
  void add(std::shared_ptr<Slab> slab);
  /// No new allocations in slab @p id; ranges already out keep it mapped until they go back.
  void remove(uint64_t id);
  /// A range of the first slab with room, else the heap (counted in `heap_bytes`).
  [[nodiscard]] format::Buffer allocate(size_t bytes) override;
  /// Bytes free across the slabs (not necessarily in one piece).
  [[nodiscard]] uint64_t free_bytes() const;
  /// Whether @p slab is one of this arena's (still open to new allocations).
  [[nodiscard]] bool holds(const Slab* slab) const;
  /// Bytes decoders took from the heap because no slab had room, since the arena began.
  [[nodiscard]] uint64_t heap_bytes() const noexcept { return heap_bytes_.load(); }

  /// Where a buffer lies in a slab range an arena handed out.
  struct Where {
    std::shared_ptr<Slab> slab;
    uint64_t offset = 0;  ///< of the buffer's first byte, from the slab's start
  };
  /// @return where @p b lies, if it is (a slice of) a slab range of some arena.
  [[nodiscard]] static std::optional<Where> locate(const format::Buffer& b);
  /// Whether @p b was allocated through an arena (in a slab or, wanting room, on the heap):
  /// decoder output, as opposed to fetched bytes.
  [[nodiscard]] static bool decoded_here(const format::Buffer& b);

 private:
  mutable std::mutex mu_;
  std::vector<std::shared_ptr<Slab>> slabs_;
  std::atomic<uint64_t> heap_bytes_{0};
};

/// A batch laid out to be sent from where it lies (see `settle_in_place`).
struct InPlace {
  std::shared_ptr<Slab> slab;
  uint64_t offset = 0;  ///< the batch's range: from here, `layout.bytes` long
  /// Owners of the slab ranges the batch's buffers lie in: held until the client's Release.
  std::vector<std::shared_ptr<const void>> hold;
  uint64_t copied = 0;               ///< bytes copied into the slab (the fetched and the rest)
  uint64_t copied_after_decode = 0;  ///< of those, decoder output that lay elsewhere
  uint64_t in_place = 0;             ///< bytes delivered where they were decoded
};

/// Settles @p layout (from `lay_out`) in the slab of @p arena that holds most of its bytes: buffers
/// in it stay where they are, the others are copied into one new range of it. Rewrites the layout's
/// buffer offsets and size to the range spanning them all, and drops its batch (the owners
/// that matter are in `hold`). Runs on a worker.
/// @return nullopt, changing nothing, when no buffer lies in a slab or that slab has no room
///         for the copies: the batch then goes the copying way (`copy_batch`).
[[nodiscard]] std::optional<InPlace> settle_in_place(BatchLayout& layout, const SlabArena& arena);

}  // namespace oc::daemon
