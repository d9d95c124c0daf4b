// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief A rate over the last few seconds: a ring of per-second byte counts.
///
/// `add` files bytes under the current second, reusing the slot of a second that has left the
/// window; `per_second` sums the slots still inside it. Constant memory, no timers: a slot is
/// only known stale by the second it stores.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>

namespace oc::daemon {

template <size_t Seconds>
class RateWindow {
 public:
  /// Adds @p bytes in second @p now (seconds since some fixed start).
  void add(int64_t now, uint64_t bytes) {
    Slot& s = slots_[static_cast<size_t>(now) % Seconds];
    if (s.second != now) s = Slot{now, 0};
    s.bytes += bytes;
  }

  /// Bytes per second over the window that ends with second @p now, counting only the
  /// @p elapsed seconds (at least one) that have passed since the start when it is shorter.
  [[nodiscard]] double per_second(int64_t now, double elapsed) const {
    uint64_t total = 0;
    for (const Slot& s : slots_) {
      if (s.second > now - static_cast<int64_t>(Seconds) && s.second <= now) total += s.bytes;
    }
    return static_cast<double>(total) / std::clamp(elapsed, 1.0, static_cast<double>(Seconds));
  }

 private:
  struct Slot {
    int64_t second = -1;
    uint64_t bytes = 0;
  };
  std::array<Slot, Seconds> slots_{};
};

}  // namespace oc::daemon
