// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief A client of onecopyd: status, and scans delivered as Arrow streams over memfd slabs.
///
/// The daemon sends each of the connection's slabs once (`SlabAdded`, with its memfd); the
/// stream maps it read-only and keeps the mapping. Each batch is a range of one slab: the
/// exported `ArrowArray` points into the mapping, and its `release` sends `Release`, which lets
/// the daemon reuse the range and send more (it holds at most
/// `daemon_client_max_batches_in_flight` unreleased). A slab is unmapped once the stream and
/// every batch in it are released.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/error.hpp"
#include "format/arrow_c_abi.h"

namespace oc::daemon {

/// The socket clients use: @p explicit_path, else $ONECOPY_SOCKET, else the knob's default.
[[nodiscard]] std::string client_socket_path(const std::string& explicit_path);

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
  double copies_per_byte = 0;
  uint32_t worker_threads = 0;
  uint64_t slabs_sent = 0;
  uint32_t gpu_devices = 0;  ///< 0 without a GPU, a driver, or a CUDA build
  uint64_t gpu_memory_used_bytes = 0;
  uint64_t gpu_memory_total_bytes = 0;
};

/// Connects to @p socket, says Hello and asks for Status.
[[nodiscard]] Result<Status> query_status(const std::string& socket);

/// @return @p s as a JSON object.
[[nodiscard]] std::string status_json(const Status& s);

/// @return @p s in the Prometheus text exposition format (version 0.0.4): `onecopy_` names,
/// counters ending in `_total`, each with its `# HELP` and `# TYPE` lines.
[[nodiscard]] std::string status_prometheus(const Status& s);

struct RemoteScanOptions {
  std::vector<std::string> columns;
  std::string filter;
  uint64_t batch_rows = 0;
  std::optional<std::pair<uint64_t, uint64_t>> row_range;
};

/// Opens @p uri in the daemon at @p socket and starts a scan; fills @p out with a stream over
/// its batches. The stream owns the connection; batches keep it open until they are released.
[[nodiscard]] Result<void> remote_scan(const std::string& socket, const std::string& uri,
                                       const RemoteScanOptions& options, ArrowArrayStream* out);

}  // namespace oc::daemon
