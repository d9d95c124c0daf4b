// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief The one table of onecopy's tunable knobs.
///
/// Every tuning number (queue depths, coalescing windows, safety limits) is a row of
/// `knob_table()`: its name, the environment variable that overrides it, its default, a validator
/// and one line of documentation. No such number is a literal anywhere else. Call sites read the
/// current values through `defaults()`, typically as default arguments.
///
/// `load_defaults_from_env()` applies environment overrides once at start-up (`main()` and the C
/// API's `oc_init` call it); an invalid value is an `Errc::invalid` error naming the variable,
/// never a silent fallback.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "config/error.hpp"

namespace oc {

/// Current values of every knob. Field documentation lives in `knob_table()`.
struct Defaults {
  std::string log_level;
  uint32_t io_queue_depth;
  uint64_t file_coalesce_distance;
  uint64_t file_coalesce_max;
  uint64_t object_coalesce_distance;
  uint64_t object_coalesce_max;
  uint64_t max_segment_bytes;
  uint64_t take_partial_segment_bytes;
  uint64_t take_partial_tail_bytes;
  uint64_t take_cache_bytes;
  uint64_t buffer_recycle_bytes;
  uint64_t cache_memory_bytes;
  std::string cache_dir;
  uint64_t cache_disk_bytes;
  uint64_t metadata_cache_bytes;
  uint64_t footer_max_bytes;
  uint64_t max_decoded_bytes;
  uint64_t cls_max_request_bytes;
  uint64_t cls_max_result_bytes;
  uint64_t cls_max_decoded_bytes;
  uint32_t ipc_zstd_level;
  uint32_t max_array_depth;
  uint32_t max_expr_depth;
  uint64_t scan_batch_rows;
  uint32_t scan_readahead_splits;
  uint32_t scan_decode_threads;
  uint64_t shard_unit_rows;
  uint64_t plan_max_pieces;
  uint32_t gpu_streams;
  uint64_t gpu_staging_bytes;
  uint64_t http_max_header_bytes;
  uint32_t http_connect_timeout_ms;
  uint32_t http_first_byte_timeout_ms;
  uint32_t http_stall_timeout_ms;
  uint32_t http_request_timeout_ms;
  uint32_t http_multirange_max_parts;
  uint32_t net_reactor_threads;
  uint32_t dns_cache_ttl_ms;
  uint32_t dns_resolver_threads;
  uint32_t http_connections_per_endpoint;
  uint64_t net_pool_bytes;
  uint32_t s3_max_requests_in_flight;
  uint32_t s3_max_attempts;
  uint32_t s3_backoff_base_ms;
  uint32_t s3_backoff_max_ms;
  uint32_t s3_hedge_after_ms;
  uint64_t s3_get_part_bytes;
  uint64_t s3_multipart_threshold;
  uint64_t s3_multipart_part_bytes;
  std::string rados_pushdown;
  uint32_t rados_ops_in_flight;
  uint64_t rados_pushdown_rows;
  std::string rados_pushdown_compression;
  uint32_t rados_connect_timeout_ms;
  uint32_t rados_op_timeout_ms;
  uint32_t rados_op_attempts;
  uint32_t credentials_refresh_margin_s;
  uint32_t credentials_fetch_timeout_ms;
  uint32_t imds_token_ttl_s;
  std::string daemon_socket;
  uint32_t daemon_max_clients;
  uint32_t daemon_client_max_batches_in_flight;
  uint64_t daemon_client_max_bytes_in_flight;
  uint64_t daemon_max_message_bytes;
  uint64_t daemon_pool_bytes;
  std::string daemon_allowed_uids;
  std::string daemon_allowed_gids;
  uint32_t daemon_watchdog_ms;
  uint32_t daemon_worker_threads;
  uint32_t daemon_client_max_open_files;
  uint32_t daemon_kept_files;
  uint32_t daemon_client_max_scans;
  uint64_t daemon_slab_bytes;
  uint64_t daemon_device_slab_bytes;
  uint64_t daemon_device_pool_bytes;
  uint32_t daemon_metrics_port;
  std::string daemon_metrics_address;
  uint32_t daemon_metrics_timeout_ms;
  uint64_t daemon_metrics_max_request_bytes;
  uint32_t daemon_metrics_max_connections;
  uint32_t daemon_io_threads;
  uint32_t daemon_client_max_requests;
  uint32_t daemon_uid_max_clients;
  uint64_t daemon_uid_max_pool_bytes;
  uint32_t daemon_pool_wait_ms;
  uint64_t daemon_max_batch_rows;
  uint32_t daemon_max_scan_columns;
  uint32_t daemon_list_max_entries;
  uint64_t daemon_client_max_queued_bytes;
  uint32_t daemon_messages_per_wakeup;
  uint32_t daemon_fd_reserve;
  uint32_t daemon_accept_pause_ms;
  std::string daemon_s3_grants;
  std::string daemon_rados_grants;
  std::string daemon_http_hosts;
  uint32_t client_connect_timeout_ms;
  uint32_t client_reply_timeout_ms;
};

/// One row of the defaults table.
struct Knob {
  std::string_view name;           ///< key in the daemon's TOML config
  std::string_view env;            ///< environment variable that overrides it
  std::string_view default_value;  ///< the default, as text in the same syntax the env takes
  std::string_view doc;            ///< one line for docs and `onecopy defaults`
  /// Parses and validates @p text into @p d; `Errc::invalid` names the knob on failure.
  Result<void> (*apply)(Defaults& d, std::string_view text);
  /// For list knobs: what joins the items of a TOML array into the one text `apply` takes
  /// (empty: the knob takes a single value).
  std::string_view join = {};
  /// An empty variable counts as unset (ONECOPY_SOCKET= tells clients to read in process, and
  /// leaves the socket at its default everywhere else); a knob without it refuses empty text.
  bool empty_env_is_unset = false;
};

/// @return every knob, in documentation order.
[[nodiscard]] std::span<const Knob> knob_table() noexcept;

/// @return the compiled-in defaults, parsed from the table's default strings.
[[nodiscard]] Defaults builtin_defaults();

/// Builds defaults from the table, overriding each knob whose variable @p getenv returns.
/// @param getenv looks a variable up; returns nullopt when it is unset.
[[nodiscard]] Result<Defaults> defaults_from_env(
    const std::function<std::optional<std::string>(std::string_view)>& getenv);

/// Loads the process environment into the process-wide defaults. Safe to call more than once.
[[nodiscard]] Result<void> load_defaults_from_env();

/// Replaces the process-wide defaults with @p d (onecopyd, after reading its config file), so
/// that every knob it sets takes effect wherever the knob is read.
/// @note Not synchronised with readers, like `load_defaults_from_env`: call it before threads
/// start.
void set_defaults(const Defaults& d);

/// @return the process-wide defaults (built-in until `load_defaults_from_env` or `set_defaults`).
/// @note Not synchronised with `load_defaults_from_env`; load once before starting threads.
[[nodiscard]] const Defaults& defaults() noexcept;

/// Parses sizes like "4096", "64KiB", "1MiB", "2GiB" (also K/M/G and KB/MB/GB as powers of 1024).
[[nodiscard]] Result<uint64_t> parse_size(std::string_view text);

}  // namespace oc
