// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief What onecopyd counts since it started, for `onecopy status` and its metrics
/// (daemon/status.hpp), and the scans that ended lately. The server adds to them on its loop
/// thread; `fetched` alone is added to by the decode pool.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>

#include "daemon/rate.hpp"
#include "daemon/status.hpp"

namespace oc::daemon {

struct Counters {
  /// Ended scans remembered, every user's together.
  static constexpr size_t kEndedScansKept = 64;

  uint64_t bytes_delivered = 0, batches_delivered = 0;
  uint64_t bytes_copied = 0, bytes_copied_after_decode = 0, bytes_in_place = 0;
  uint64_t slabs_sent = 0, errors = 0;
  uint64_t connections_refused = 0, requests_refused = 0;
  uint64_t manifest_fallbacks = 0;  ///< dataset files no manifest described (net/dataset.hpp)
  RateWindow<10> delivered_rate;
  /// Segment bytes scans read, added to by the decode jobs.
  std::shared_ptr<std::atomic<uint64_t>> fetched = std::make_shared<std::atomic<uint64_t>>(0);
  /// The latest kEndedScansKept scans to end, oldest first.
  std::deque<ScanStatus> ended_scans;

  void remember(ScanStatus scan) {
    ended_scans.push_back(std::move(scan));
    if (ended_scans.size() > kEndedScansKept) ended_scans.pop_front();
  }
};

}  // namespace oc::daemon
