// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief Vortex files stored as RADOS objects (`rados://pool/object`), through librados.
///
/// One Vortex file is one RADOS object: striped objects and RGW-managed objects are out of
/// scope. The process holds one cluster connection, configured the way every Ceph client is:
/// `ceph.conf` from `CEPH_CONF` (else Ceph's default search), then `CEPH_ARGS` (`--id`,
/// `--keyring`, any option), and the keyring the configuration names. Timeouts come from the
/// `rados_connect_timeout_ms` and `rados_op_timeout_ms` knobs. A forked child (a DataLoader
/// worker) inherits no usable connection: it opens its own on first use.
///
/// Besides reads (`open_rados_source`), a pool offers object-class calls (`exec_async`) that
/// the pushdown scan uses to run scans inside the OSDs.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "config/error.hpp"
#include "format/segment_source.hpp"

namespace oc::net {

/// `rados://pool/object`. The pool is one path component; the object is the rest (it may hold
/// `/`, or wildcards for `expand_uri`).
struct RadosUri {
  std::string pool;
  std::string object;
  [[nodiscard]] std::string str() const { return "rados://" + pool + "/" + object; }
};

/// Parses `rados://pool/object`; @p allow_empty_object admits `rados://pool/` (a listing).
/// `invalid` for anything else.
[[nodiscard]] Result<RadosUri> parse_rados_uri(std::string_view uri,
                                               bool allow_empty_object = false);

/// @return a librados return code @p rc (negative errno) as an error about @p what: ENOENT is
/// `not_found`, EPERM/EACCES `denied`, ETIMEDOUT `timeout`, others `io` (errno kept).
[[nodiscard]] Error rados_error(int rc, std::string_view what);

/// An I/O context on one pool of the process's cluster connection. Thread-safe.
class RadosPool {
 public:
  virtual ~RadosPool() = default;
  [[nodiscard]] virtual const std::string& name() const = 0;
  /// @return the size of @p object.
  [[nodiscard]] virtual Result<uint64_t> stat(const std::string& object) = 0;
  /// Reads every range of @p ranges of @p object into @p out (same length each), at most
  /// `rados_ops_in_flight` reads at a time. A short read is `corrupt` (the object shrank).
  [[nodiscard]] virtual Result<void> read(const std::string& object,
                                          std::span<const format::ByteRange> ranges,
                                          std::span<uint8_t* const> out) = 0;
  /// Replaces @p object with the @p size bytes @p next_chunk yields (called until @p size bytes
  /// came; each call returns the next bytes, at most the span it is given).
  [[nodiscard]] virtual Result<void> write(
      const std::string& object, uint64_t size,
      const std::function<Result<size_t>(std::span<uint8_t>)>& next_chunk) = 0;
  /// Object names in the pool (default namespace), unordered. `invalid` past @p max_entries.
  [[nodiscard]] virtual Result<std::vector<std::string>> list(uint64_t max_entries) = 0;

  /// An object-class call in flight (`exec_async`).
  class Call {
   public:
    virtual ~Call() = default;
    /// Waits for the reply: the method's output, or its return code (negative errno) as the
    /// second member when it failed (first member empty).
    [[nodiscard]] virtual std::pair<std::string, int> wait() = 0;
  };
  /// Starts @p cls.@p method on @p object with input @p in; the reply may be of any size.
  [[nodiscard]] virtual Result<std::unique_ptr<Call>> exec_async(const std::string& object,
                                                                 const std::string& cls,
                                                                 const std::string& method,
                                                                 std::string in) = 0;
};

/// @return the pool @p name of the process's cluster connection (connecting on first use).
[[nodiscard]] Result<std::shared_ptr<RadosPool>> rados_pool(const std::string& name);

/// The names in @p pool that start with @p prefix, sorted; `invalid` past @p max_entries
/// objects in the pool (RadosPool::list).
[[nodiscard]] Result<std::vector<std::string>> names_under(RadosPool& pool,
                                                           const std::string& prefix,
                                                           uint64_t max_entries);

/// Opens `rados://pool/object` as a segment source: one stat, then reads of merged ranges
/// (object-store coalescing options), `rados_ops_in_flight` at a time.
[[nodiscard]] Result<std::shared_ptr<format::SegmentSource>> open_rados_source(const RadosUri& uri);

}  // namespace oc::net
