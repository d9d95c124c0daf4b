// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief A client of onecopyd: status, listings, units, and scans delivered as Arrow streams
/// over memfd slabs.
///
/// Local files are opened here, in the calling process and with its permissions, and passed to
/// the daemon as descriptors; local patterns are expanded here too. A device scan's batches lie
/// in device slabs (`DeviceSlabAdded`), mapped once per connection in GPU memory
/// (kernels/shared_memory.hpp); their arrays point there. Only s3:// and http(s)
/// names go to the daemon as names, read with its credentials as its access policy allows.
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

#include "client/scan_cursor.hpp"
#include "config/error.hpp"
#include "daemon/status.hpp"
#include "format/arrow_c_abi.h"
#include "format/scan_request.hpp"
#include "net/dataset.hpp"

namespace oc::client {

/// The socket clients use: @p explicit_path, else $ONECOPY_SOCKET, else the knob's default.
[[nodiscard]] std::string client_socket_path(const std::string& explicit_path);

/// Where a client reads when its caller did not say (onecopy.open, onecopy.torch): the socket
/// of the daemon that serves this machine, or nullopt to read in this process. @p explicit_path
/// when given; else $ONECOPY_SOCKET when set (set and empty: this process); else the default
/// socket when its file exists, and this process when it does not. A socket chosen so must
/// answer a Hello: when it does not, the error names the socket, where it came from and what
/// to do, and nothing is read in this process instead (with this process's credentials).
[[nodiscard]] Result<std::optional<std::string>> serving_daemon_socket(
    const std::string& explicit_path);

/// Connects to @p socket, says Hello and asks for Status.
[[nodiscard]] Result<daemon::Status> query_status(const std::string& socket);
/// The index of an s3:// dataset as onecopyd makes it (net/dataset.hpp, protocol.fbs Dataset):
/// one listing, the manifest, each file's footer from the metadata cache, the manifest or the
/// file. With @p footers, each file's footer bytes too (`onecopy index`).
[[nodiscard]] Result<net::DatasetIndex> remote_dataset(const std::string& socket,
                                                       const std::string& pattern,
                                                       uint64_t unit_rows, bool footers);
/// @return @p index as JSON: {"manifest", "from_cache", "from_manifest", "fallbacks", "files":
/// [{"uri", "etag", "size", "rows", "units": [b, e, ...], "footer_offset", "footer" (hex)}]}.
[[nodiscard]] std::string dataset_json(const net::DatasetIndex& index);

/// What `clear_cache` dropped.
struct ClearedCache {
  uint64_t memory_bytes = 0, disk_bytes = 0, metadata_bytes = 0;
};
/// Empties the node's caches (`onecopy cache clear`); onecopyd allows only root and its own user.
[[nodiscard]] Result<ClearedCache> clear_cache(const std::string& socket);

/// The files @p pattern names (client/open_uri.hpp expand_uri): an s3:// pattern listed by the
/// daemon at @p socket with its credentials, a local one expanded in this process.
[[nodiscard]] Result<std::vector<std::string>> remote_list(const std::string& socket,
                                                           const std::string& pattern);

/// The units of work of @p uri (format/shard.hpp file_units with @p max_rows), computed by the
/// daemon at @p socket: (begin, end) pairs.
[[nodiscard]] Result<std::vector<std::pair<uint64_t, uint64_t>>> remote_units(
    const std::string& socket, const std::string& uri, uint64_t max_rows);

/// Opens @p uri in the daemon at @p socket (a local file is opened here and passed as a
/// descriptor) and starts @p request there (the daemon validates and plans it: format::plan);
/// fills @p out with a stream over its batches. The stream owns the connection; batches keep it
/// open until they are released. When the daemon goes away mid-scan, the stream's get_next
/// fails with EIO and the cursor's error() says so. A device request's batches lie in device
/// slabs mapped here; each is released to the daemon only once the work queued on
/// @p consumer_stream (a cudaStream_t; 0: the whole device) by then has run.
/// @return the scan's cursor, shared with the stream.
[[nodiscard]] Result<std::shared_ptr<const client::ScanCursor>> remote_scan(
    const std::string& socket, const std::string& uri, const format::ScanRequest& request,
    uintptr_t consumer_stream, ArrowArrayStream* out);

}  // namespace oc::client
