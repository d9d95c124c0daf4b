// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief onecopyd's status: the one snapshot the daemon takes, its `StatusReply` on the wire,
/// and its JSON and Prometheus renderings, which the daemon (`/metrics`) and the clients
/// (`onecopy status`, `onecopy metrics`, `Client.status()`) share.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "daemon/protocol_generated.h"
#include "format/scan_profile.hpp"

namespace oc::daemon {

/// One scan as `onecopy status` shows it: a running one, or one of the latest to have ended.
struct ScanStatus {
  uint64_t scan = 0;
  uint32_t pid = 0, uid = 0;  ///< the client's
  std::string uri;            ///< what it reads (at most kStatusUriBytes of the name)
  std::string state;          ///< running, done, failed or cancelled
  uint64_t bytes = 0;         ///< Arrow buffer bytes sent
  format::ScanProfile profile;
};

/// One CUDA device as onecopyd uses it (protocol.fbs DeviceStatus).
struct DeviceStatus {
  int32_t device = 0;
  std::string share;               ///< "vmm" (POSIX descriptors) or "ipc" (cudaIpcMemHandle)
  uint64_t memory_held_bytes = 0;  ///< device slabs held for clients
  uint64_t batches_in_flight = 0;  ///< device batches leased now
  uint64_t bytes_decoded = 0;      ///< bytes of batch columns decoded there so far
  uint64_t bytes_uploaded = 0;     ///< bytes sent to it (encoded inputs, CPU-decoded columns)
  uint64_t decode_ns = 0;          ///< wall time its decode sessions waited for those
};

/// The longest name a ScanStatus carries: a status reply stays small whatever names clients
/// gave.
inline constexpr size_t kStatusUriBytes = 256;

struct Status {
  std::string version;
  uint64_t uptime_ms = 0;
  uint32_t clients = 0;
  uint32_t active_scans = 0;
  uint64_t batches_in_flight = 0;
  uint64_t bytes_delivered = 0;
  uint64_t errors = 0;
  uint64_t pool_bytes = 0;
  uint64_t pool_limit_bytes = 0;
  uint64_t batches_delivered = 0;
  double gbps_10s = 0;
  uint64_t requests_in_flight = 0;
  uint64_t bytes_copied = 0;
  uint64_t bytes_copied_after_decode = 0;  ///< of bytes_copied, decoder output (not fetched bytes)
  uint64_t bytes_in_place = 0;             ///< delivered from where they were decoded
  double copies_per_byte = 0;
  uint32_t worker_threads = 0;
  uint64_t slabs_sent = 0;
  uint32_t gpu_devices = 0;  ///< 0 without a GPU, a driver, or a CUDA build
  uint64_t gpu_memory_used_bytes = 0;
  uint64_t gpu_memory_total_bytes = 0;
  uint64_t bytes_fetched = 0;  ///< segment bytes scans read from files and objects
  uint64_t s3_requests = 0;    ///< S3 requests, retries and failed requests, since start
  uint64_t s3_retries = 0;
  uint64_t s3_failures = 0;
  uint64_t slabs = 0;                ///< slabs that exist now, every client's
  uint64_t descriptors = 0;          ///< descriptors held for clients: sockets, files, slabs
  uint64_t descriptor_budget = 0;    ///< RLIMIT_NOFILE less daemon_fd_reserve
  uint64_t connections_refused = 0;  ///< not allowed, over a limit, or at the descriptor budget
  uint64_t requests_refused = 0;     ///< requests answered with an Error for a limit or a denial
  /// The node's byte cache (format/byte_cache.hpp) and metadata cache (format/metadata_cache.hpp).
  uint64_t cache_hits = 0;               ///< Ranges the byte cache served from memory or disk.
  uint64_t cache_misses = 0;             ///< Ranges the byte cache fetched from storage.
  uint64_t cache_bytes_from_memory = 0;  ///< Bytes the byte cache served from memory.
  uint64_t cache_bytes_from_disk = 0;    ///< Bytes the byte cache served from its disk tier.
  uint64_t cache_bytes_from_store =
      0;                            ///< Bytes the byte cache fetched from storage for its readers.
  uint64_t cache_evictions = 0;     ///< Entries evicted from either tier of the byte cache.
  uint64_t cache_memory_bytes = 0;  ///< Bytes the byte cache holds in memory.
  uint64_t cache_memory_limit_bytes = 0;  ///< The memory tier's limit (cache_memory_bytes).
  uint64_t cache_disk_bytes = 0;          ///< Bytes the byte cache holds on disk.
  uint64_t cache_disk_limit_bytes = 0;    ///< The disk tier's limit (cache_disk_bytes).
  uint32_t cache_disk_on =
      0;  ///< 1 while the disk tier is in use, 0 when off or turned off by an error.
  uint64_t cache_disk_errors = 0;      ///< Write and read errors of the disk tier.
  uint64_t cache_disk_dropped = 0;     ///< Cache files removed for failing their checks.
  uint64_t metadata_cache_hits = 0;    ///< Opens served from the metadata cache.
  uint64_t metadata_cache_misses = 0;  ///< Opens that read a footer from storage.
  uint64_t metadata_cache_bytes = 0;   ///< Footer bytes the metadata cache holds.
  uint64_t manifest_fallbacks = 0;  ///< Files of a dataset index that a manifest did not describe,
                                    ///< read from their own footers.
  uint64_t kept_files = 0;          ///< Local files kept open for the next Open of them.
  uint64_t kept_file_hits = 0;      ///< Opens served from a kept file.
  /// The CUDA devices device scans have used, with their rates (JSON "devices").
  std::vector<DeviceStatus> devices;
  /// The scans the asking client may see: its own user's (every user's for root), running and
  /// recently ended. Not in the Prometheus rendering.
  std::vector<ScanStatus> scans;
};

/// Writes @p s as a finished `StatusReply` message into @p fbb.
void build_status_reply(flatbuffers::FlatBufferBuilder& fbb, const Status& s);

/// @return the status a `StatusReply` carries.
[[nodiscard]] Status status_from_reply(const fbs::StatusReply& r);

/// @return @p s as a JSON object; "scans" lists its scans with their stages in seconds.
[[nodiscard]] std::string status_json(const Status& s);

/// @return @p s in the Prometheus text exposition format (version 0.0.4): `onecopy_` names,
/// counters ending in `_total`, each with its `# HELP` and `# TYPE` lines.
[[nodiscard]] std::string status_prometheus(const Status& s);

}  // namespace oc::daemon
