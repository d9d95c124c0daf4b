// SPDX-License-Identifier: Apache-2.0
#include "client/status_text.hpp"

#include <fmt/format.h>

#include <array>

#include "format/scan_profile.hpp"

namespace oc::client {
namespace {

// Each scan on one line, its stages in seconds: where its time went, and which held it up.
void print_scans(std::ostream& out, const std::vector<daemon::ScanStatus>& scans) {
  out << "scans (this user's; root sees every user's): " << scans.size() << "\n";
  if (scans.empty()) return;
  out << fmt::format("  {:>6} {:>8} {:<9} {:>12} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8}  {:<10} {}\n",
                     "scan", "pid", "state", "rows", "wall s", "storage", "decode", "copy",
                     "consumer", "pool", "bottleneck", "uri");
  const auto sec = [](uint64_t ns) { return static_cast<double>(ns) / 1e9; };
  for (const auto& c : scans) {
    const auto& p = c.profile;
    // A client names its own files: no control character of its reaches root's terminal.
    std::string uri = c.uri;
    for (char& ch : uri) {
      if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f) ch = '?';
    }
    out << fmt::format(
        "  {:>6} {:>8} {:<9} {:>12} {:>8.3f} {:>8.3f} {:>8.3f} {:>8.3f} {:>8.3f} {:>8.3f}  {:<10} "
        "{}\n",
        c.scan, c.pid, c.state, p.rows, sec(p.wall_ns), sec(p.storage_ns), sec(p.decode_ns),
        sec(p.copy_ns), sec(p.consumer_wait_ns), sec(p.pool_wait_ns), format::bottleneck(p), uri);
  }
}

}  // namespace

void print_status(std::ostream& out, const daemon::Status& s) {
  out << "onecopyd " << s.version << ", up " << human_duration(s.uptime_ms) << "\n"
      << "clients:           " << s.clients << "\n"
      << "active scans:      " << s.active_scans << "\n"
      << "batches in flight: " << s.batches_in_flight << "\n"
      << "bytes fetched:     " << human_bytes(s.bytes_fetched) << " (S3: " << s.s3_requests
      << " requests, " << s.s3_retries << " retries, " << s.s3_failures << " failed)\n"
      << "bytes delivered:   " << human_bytes(s.bytes_delivered) << " in " << s.batches_delivered
      << " batches\n"
      << "rate (last 10 s):  " << fmt::format("{:.3f}", s.gbps_10s) << " GB/s\n"
      << "requests in flight: " << s.requests_in_flight << " (" << s.worker_threads
      << " worker threads)\n"
      << "copies per byte:   " << fmt::format("{:.3f}", s.copies_per_byte) << " ("
      << human_bytes(s.bytes_copied) << " copied into slabs)\n"
      << "copied after decode: " << human_bytes(s.bytes_copied_after_decode) << " ("
      << human_bytes(s.bytes_in_place) << " sent where they were decoded)\n"
      << "errors:            " << s.errors << "\n"
      << "pool:              " << human_bytes(s.pool_bytes) << " of "
      << human_bytes(s.pool_limit_bytes) << " (" << s.slabs_sent << " slabs sent)\n"
      << "descriptors:       " << s.descriptors << " of " << s.descriptor_budget << " for clients ("
      << s.connections_refused << " connections and " << s.requests_refused
      << " requests refused)\n";
  const uint64_t asked = s.cache_hits + s.cache_misses;
  out << "byte cache:        " << human_bytes(s.cache_memory_bytes) << " of "
      << human_bytes(s.cache_memory_limit_bytes) << " in memory, ";
  if (s.cache_disk_on) {
    out << human_bytes(s.cache_disk_bytes) << " of " << human_bytes(s.cache_disk_limit_bytes)
        << " on disk\n";
  } else {
    out << "no disk tier" << (s.cache_disk_errors ? " (turned off by an error)" : "") << "\n";
  }
  out << "  ranges:          " << s.cache_hits << " hits, " << s.cache_misses << " misses"
      << (asked ? fmt::format(" ({:.1f}% hits)", 100.0 * s.cache_hits / asked) : "") << ", "
      << s.cache_evictions << " evictions\n"
      << "  bytes:           " << human_bytes(s.cache_bytes_from_memory) << " from memory, "
      << human_bytes(s.cache_bytes_from_disk) << " from disk, "
      << human_bytes(s.cache_bytes_from_store) << " from storage\n"
      << "  disk:            " << s.cache_disk_errors << " errors, " << s.cache_disk_dropped
      << " files dropped\n"
      << "metadata cache:    " << human_bytes(s.metadata_cache_bytes) << ", "
      << s.metadata_cache_hits << " hits, " << s.metadata_cache_misses << " misses, "
      << s.manifest_fallbacks << " files outside a manifest\n"
      << "kept files:        " << s.kept_files << " open, " << s.kept_file_hits
      << " opens served\n";
  if (s.gpu_devices == 0) {
    out << "GPU:               none\n";
  } else {
    out << "GPU:               " << s.gpu_devices << " devices, "
        << human_bytes(s.gpu_memory_used_bytes) << " of " << human_bytes(s.gpu_memory_total_bytes)
        << " of device memory used\n";
  }
  print_scans(out, s.scans);
}

}  // namespace oc::client
