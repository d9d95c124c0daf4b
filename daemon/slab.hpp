// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief A record batch copied into one sealed memfd (a slab), ready to send as a `Batch`.
///
/// Filling a slab is the expensive half of serving a batch (the copy), so it runs on a worker;
/// the loop thread only assigns the lease and sends the descriptor.
#pragma once

#include <cstdint>
#include <vector>

#include "config/error.hpp"
#include "daemon/protocol_generated.h"
#include "format/column.hpp"

namespace oc::daemon {

/// One node of the batch's pre-order Arrow array tree (protocol.fbs `ArrayNode`).
struct SlabArray {
  int64_t length = 0, null_count = 0, offset = 0;
  std::vector<fbs::BufferRef> buffers;
  uint32_t n_children = 0;
};

/// A filled, sealed slab; owns its memfd.
struct Slab {
  Slab() = default;
  Slab(Slab&& o) noexcept;
  Slab& operator=(Slab&& o) noexcept;
  ~Slab();

  int fd = -1;
  uint64_t bytes = 0;   ///< slab size
  uint64_t copied = 0;  ///< bytes memcpy'd into it (buffers, without alignment padding)
  uint64_t rows = 0;
  std::vector<SlabArray> arrays;
};

/// Copies every buffer of @p batch, 64-byte aligned, into a fresh sealed memfd.
[[nodiscard]] Result<Slab> fill_slab(const format::Column& batch);

}  // namespace oc::daemon
