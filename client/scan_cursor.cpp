// SPDX-License-Identifier: Apache-2.0
#include "client/scan_cursor.hpp"

namespace oc::client {

ScanCursor::ScanCursor(uint64_t units, format::UnitPosition start)
    : units_(units), started_ns_(format::monotonic_ns()), position_(start) {}

format::UnitPosition ScanCursor::position() const {
  std::lock_guard lock(mu_);
  return position_;
}

std::optional<Error> ScanCursor::error() const {
  std::lock_guard lock(mu_);
  return error_;
}

format::ScanProfile ScanCursor::profile() const {
  std::lock_guard lock(mu_);
  format::ScanProfile p = profile_;
  if (!p.complete) p.wall_ns = format::monotonic_ns() - started_ns_;
  return p;
}

void ScanCursor::advance(format::UnitPosition position) {
  std::lock_guard lock(mu_);
  position_ = position;
}

void ScanCursor::fail(Error e) {
  std::lock_guard lock(mu_);
  error_ = std::move(e);
}

void ScanCursor::set_profile(const format::ScanProfile& p) {
  std::lock_guard lock(mu_);
  // The wall time is the cursor's: it stops when the scan ends, not when someone next asks.
  const bool ended = profile_.complete;
  const uint64_t wall = ended ? profile_.wall_ns : format::monotonic_ns() - started_ns_;
  profile_ = p;
  profile_.complete = ended || p.complete;
  profile_.wall_ns = wall;
}

}  // namespace oc::client
