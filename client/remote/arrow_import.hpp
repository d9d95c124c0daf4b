// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief Arrow C Data structs over onecopyd's slabs: a scan's schema from `ScanBegin`, and
/// each `Batch` as an `ArrowArray` whose buffers point into the read-only slab mapping.
///
/// A batch's arrays share one `Lease`; when the last of them is released, the lease sends
/// `Release`, which lets the daemon reuse the batch's range of the slab.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "client/remote/conn.hpp"
#include "config/error.hpp"
#include "format/arrow_c_abi.h"

namespace oc::client {

using daemon::SchemaNodeCopy;

/// Copies @p begin's schema; `protocol` unless it is a well-formed pre-order tree.
[[nodiscard]] Result<std::vector<SchemaNodeCopy>> schema_of(const daemon::fbs::ScanBegin& begin);

/// Fills @p out with the schema @p nodes describe (nodes from `schema_of`).
void build_schema(const std::vector<SchemaNodeCopy>& nodes, ArrowSchema* out);

/// One batch's range of a slab; its destructor (the last array of the batch released) sends
/// Release, which frees the range for a later batch. A forked child sends nothing (Conn).
struct Lease {
  std::shared_ptr<Conn> conn;
  uint64_t lease = 0;
  std::shared_ptr<MappedSlab> slab;  ///< null for a batch of no bytes, or once copied out
  uint64_t begin = 0, bytes = 0;     ///< the batch's range of the slab
  uint64_t held = 0;  ///< what the daemon counts against this client's limits (Batch.pinned)
  /// A device batch (in a device slab): never copied out, and released only once the work
  /// queued so far on `consumer_stream` (a cudaStream_t; 0: the whole device) has run, so that
  /// no kernel of the consumer still reads the range when the daemon reuses it.
  bool on_device = false;
  uintptr_t consumer_stream = 0;

  /// Copies the range to memory of this process and sends Release now, so that a batch the
  /// consumer keeps holds none of the daemon's limits. Call before `build_batch`. Does nothing
  /// for a device batch.
  /// `out_of_memory` when the copy cannot be allocated (the lease is kept then).
  [[nodiscard]] Result<void> copy_out();
  /// The first byte of the range, in the slab or in the copy.
  [[nodiscard]] const uint8_t* data() const;
  ~Lease();

 private:
  void release_now();
  struct FreeDeleter {
    void operator()(uint8_t* p) const { std::free(p); }
  };
  std::unique_ptr<uint8_t, FreeDeleter> copy_;
  size_t copy_skew_ =
      0;  // the copy keeps the range's offset mod 64, so buffers keep their alignment
  bool released_ = false;
};

/// Fills @p out with @p batch's arrays over @p lease's slab range. `protocol` when the tree is
/// malformed or a buffer lies outside the range.
[[nodiscard]] Result<void> build_batch(const daemon::fbs::Batch& batch,
                                       const std::shared_ptr<Lease>& lease, ArrowArray* out);

}  // namespace oc::client
