// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief How far a scan's Arrow stream has got, and where its time went: shared between the
/// stream, which updates it as it hands out batches, and its caller, which reads it from any
/// thread while and after the stream is consumed.
///
/// It is separate from the stream because Arrow consumers move streams into their own structs
/// (pyarrow does); the cursor stays valid wherever the stream went.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>

#include "config/error.hpp"
#include "format/scan_profile.hpp"
#include "format/shard.hpp"

namespace oc::client {

class ScanCursor {
 public:
  /// A scan of @p units units (0: not sharded) that starts at @p start, started now.
  ScanCursor(uint64_t units, format::UnitPosition start);

  /// @return the position just after the last batch handed out (the start before the first);
  /// {0, 0} throughout for an unsharded scan. A scan started there delivers the rest.
  [[nodiscard]] format::UnitPosition position() const;
  /// @return the number of units in the shard (ScanBegin.units); 0 for an unsharded scan.
  [[nodiscard]] uint64_t units() const noexcept { return units_; }
  /// @return the error that ended the stream (`io`, "daemon connection lost: …" when the
  /// daemon went away), or nullopt while it has not failed.
  [[nodiscard]] std::optional<Error> error() const;
  /// @return the stages so far (format/scan_profile.hpp); while the scan runs, wall_ns counts
  /// to now.
  [[nodiscard]] format::ScanProfile profile() const;

  /// Called by the stream: a batch ending at @p position was handed out.
  void advance(format::UnitPosition position);
  /// Called by the stream: it failed with @p e.
  void fail(Error e);
  /// Called by the stream: its stages now stand at @p p (wall_ns is the cursor's own).
  void set_profile(const format::ScanProfile& p);

 private:
  const uint64_t units_;
  const uint64_t started_ns_;
  mutable std::mutex mu_;
  format::UnitPosition position_;
  std::optional<Error> error_;
  format::ScanProfile profile_;
};

}  // namespace oc::client
