// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief Where a scan's time went, stage by stage, as its user sees it: `ds.stats()`,
/// `ScanCursor.stats()`, `onecopy status`. One struct for scans in process and in onecopyd, so
/// that a user compares like with like.
///
/// The stages do not add up to the wall time: decoding may run on several threads, and in
/// onecopyd the stages of one scan overlap with its consumer. Each says how long that stage
/// held the scan up:
///   - storage_ns: waiting for segment reads (local file or object store);
///   - decode_ns: planning, evaluating the filter and decoding the projected columns;
///   - copy_ns: copying decoded batches into the client's slabs (onecopyd only);
///   - consumer_wait_ns: batches ready, waiting for the consumer to take the next one (in
///     process: the time between two calls for a batch; in onecopyd: the time the client held
///     its limit of unreleased batches);
///   - pool_wait_ns: a decoded batch waiting for room in onecopyd's slab pool;
///   - wait_ns: the consumer waiting for the scan, measured on the consumer's side.
/// A scan whose consumer_wait_ns is most of its wall time keeps up with its consumer; one
/// whose wait_ns is, holds it up, and storage_ns against decode_ns says which stage is why.
#pragma once

#include <chrono>
#include <cstdint>
#include <utility>

namespace oc::format {

struct ScanStats;  // format/reader.hpp

struct ScanProfile {
  uint64_t rows = 0;        ///< rows delivered to the consumer
  uint64_t batches = 0;     ///< batches delivered to the consumer
  uint64_t bytes_read = 0;  ///< segment bytes fetched from the source
  uint64_t storage_ns = 0;
  uint64_t decode_ns = 0;
  uint64_t copy_ns = 0;
  uint64_t consumer_wait_ns = 0;
  uint64_t pool_wait_ns = 0;
  uint64_t wait_ns = 0;
  uint64_t wall_ns = 0;   ///< from the scan's start to its end (or to now, while it runs)
  bool complete = false;  ///< the scan has ended: the numbers are final
};

/// @return steady-clock nanoseconds, for stage timers.
inline uint64_t monotonic_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

/// @return the stage that held @p p up longest: "storage", "decode", "copy", "pool" or
/// "consumer" (the scan kept up: its consumer is the slower side), or "none" before any time
/// was spent.
[[nodiscard]] inline const char* bottleneck(const ScanProfile& p) {
  const std::pair<uint64_t, const char*> stages[] = {{p.storage_ns, "storage"},
                                                     {p.decode_ns, "decode"},
                                                     {p.copy_ns, "copy"},
                                                     {p.pool_wait_ns, "pool"},
                                                     {p.consumer_wait_ns, "consumer"}};
  const char* worst = "none";
  uint64_t longest = 0;
  for (const auto& [ns, name] : stages) {
    if (ns > longest) {
      longest = ns;
      worst = name;
    }
  }
  return worst;
}

/// Sets the reader's stages of @p p (storage, decode, bytes read) from @p s.
void set_reader_stages(ScanProfile& p, const ScanStats& s);

}  // namespace oc::format
