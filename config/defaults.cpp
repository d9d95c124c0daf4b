// SPDX-License-Identifier: Apache-2.0
#include "config/defaults.hpp"

#include <arpa/inet.h>

#include <array>
#include <cctype>
#include <charconv>
#include <cstdlib>

#include "config/strings.hpp"

namespace oc {
namespace {

Result<uint64_t> parse_u64(std::string_view name, std::string_view text, uint64_t lo, uint64_t hi,
                           bool size) {
  Result<uint64_t> v = size ? parse_size(text) : Result<uint64_t>(uint64_t{0});
  if (!size) {
    uint64_t n = 0;
    auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
    if (ec != std::errc() || p != text.data() + text.size() || text.empty()) {
      return OC_ERROR(Errc::invalid, "{}: expected an unsigned integer, got '{}'", name, text);
    }
    v = n;
  }
  if (!v.ok()) return std::move(v.error()).with_context(std::string(name));
  OC_EXPECT(*v >= lo && *v <= hi, invalid, "{}: {} is outside [{}, {}]", name, *v, lo, hi);
  return v;
}

// Each knob's parser is generated from its field, bounds and kind so that the table below is the
// only place a default or a limit is written down.
template <auto Field, uint64_t Lo, uint64_t Hi, bool Size>
Result<void> apply_number(Defaults& d, std::string_view text, std::string_view name) {
  OC_ASSIGN_OR_RETURN(uint64_t v, parse_u64(name, text, Lo, Hi, Size));
  d.*Field = static_cast<std::remove_reference_t<decltype(d.*Field)>>(v);
  return {};
}

Result<void> apply_log_level(Defaults& d, std::string_view text) {
  static constexpr std::array kLevels{"trace", "debug", "info", "warn", "error", "critical", "off"};
  const std::string l = lower(text);
  for (const char* level : kLevels) {
    if (l == level) {
      d.log_level = l;
      return {};
    }
  }
  return OC_ERROR(Errc::invalid,
                  "log_level: '{}' is not one of trace, debug, info, warn, error, critical, off",
                  text);
}

Result<void> apply_rados_pushdown(Defaults& d, std::string_view text) {
  const std::string v = lower(text);
  OC_EXPECT(v == "auto" || v == "on" || v == "off", invalid,
            "rados_pushdown: '{}' is not one of auto, on, off", text);
  d.rados_pushdown = v;
  return {};
}

Result<void> apply_rados_pushdown_compression(Defaults& d, std::string_view text) {
  const std::string v = lower(text);
  OC_EXPECT(v == "zstd" || v == "none", invalid,
            "rados_pushdown_compression: '{}' is not one of zstd, none", text);
  d.rados_pushdown_compression = v;
  return {};
}

// Comma-separated numeric ids, "*" for anyone, "" for no one: daemon_allowed_uids / _gids.
template <auto Field>
Result<void> apply_id_list(Defaults& d, std::string_view text, std::string_view name) {
  if (text != "*") {
    size_t start = 0;
    while (start <= text.size() && !text.empty()) {
      size_t end = text.find(',', start);
      if (end == std::string_view::npos) end = text.size();
      std::string_view id = text.substr(start, end - start);
      uint32_t n = 0;
      auto [p, ec] = std::from_chars(id.data(), id.data() + id.size(), n);
      if (id.empty() || ec != std::errc() || p != id.data() + id.size()) {
        return OC_ERROR(Errc::invalid, "{}: '{}' is not a comma-separated list of numeric ids",
                        name, text);
      }
      start = end + 1;
    }
  }
  d.*Field = std::string(text);
  return {};
}

// The metrics port serves anyone who can connect, so it may listen on loopback only.
Result<void> apply_loopback_address(Defaults& d, std::string_view text) {
  in_addr a{};
  const std::string s(text);
  OC_EXPECT(::inet_pton(AF_INET, s.c_str(), &a) == 1 && (ntohl(a.s_addr) >> 24) == 127, invalid,
            "daemon_metrics_address: '{}' is not an IPv4 loopback address (127.0.0.0/8)", text);
  d.daemon_metrics_address = s;
  return {};
}

// Text knobs whose syntax the unit that reads them checks (onecopyd's access policy: its config
// loader parses them with their key and line).
template <auto Field>
Result<void> apply_text(Defaults& d, std::string_view text) {
  d.*Field = std::string(text);
  return {};
}

Result<void> apply_daemon_socket(Defaults& d, std::string_view text) {
  // sockaddr_un.sun_path holds 108 bytes, the terminating NUL included.
  OC_EXPECT(!text.empty() && text.size() < 108, invalid,
            "daemon_socket: '{}' must be a non-empty path shorter than 108 bytes", text);
  d.daemon_socket = std::string(text);
  return {};
}

constexpr uint64_t KiB = 1024, MiB = KiB * 1024, GiB = MiB * 1024, TiB = GiB * 1024;

#define OC_NUMBER_KNOB(field, lo, hi, size)                            \
  [](Defaults& d, std::string_view t) -> Result<void> {                \
    return apply_number<&Defaults::field, lo, hi, size>(d, t, #field); \
  }

constexpr std::array kKnobs{
    Knob{"log_level", "ONECOPY_LOG_LEVEL", "info",
         "Log verbosity: trace, debug, info, warn, error, critical or off.", apply_log_level},
    Knob{"io_queue_depth", "ONECOPY_IO_QUEUE_DEPTH", "64",
         "io_uring submission queue entries per ring (1..4096).",
         OC_NUMBER_KNOB(io_queue_depth, 1, 4096, false)},
    Knob{"file_coalesce_distance", "ONECOPY_FILE_COALESCE_DISTANCE", "1MiB",
         "Local files: merge reads whose gap is at most this many bytes (Vortex: 1 MiB).",
         OC_NUMBER_KNOB(file_coalesce_distance, 0, GiB, true)},
    Knob{"file_coalesce_max", "ONECOPY_FILE_COALESCE_MAX", "4MiB",
         "Local files: never merge reads beyond this many bytes (Vortex: 4 MiB).",
         OC_NUMBER_KNOB(file_coalesce_max, 4 * KiB, 4 * GiB, true)},
    Knob{"object_coalesce_distance", "ONECOPY_OBJECT_COALESCE_DISTANCE", "1MiB",
         "Object stores: merge ranged GETs whose gap is at most this (Vortex: 1 MiB).",
         OC_NUMBER_KNOB(object_coalesce_distance, 0, GiB, true)},
    Knob{"object_coalesce_max", "ONECOPY_OBJECT_COALESCE_MAX", "16MiB",
         "Object stores: never merge ranged GETs beyond this many bytes (Vortex: 16 MiB).",
         OC_NUMBER_KNOB(object_coalesce_max, 4 * KiB, 4 * GiB, true)},
    Knob{"max_segment_bytes", "ONECOPY_MAX_SEGMENT_BYTES", "4GiB",
         "Largest segment a file may declare; larger ones are rejected as corrupt.",
         OC_NUMBER_KNOB(max_segment_bytes, KiB, TiB, true)},
    Knob{
        "take_partial_segment_bytes", "ONECOPY_TAKE_PARTIAL_SEGMENT_BYTES", "64KiB",
        "A take reads segments of at least this many bytes in part: their array tree, then only "
        "the byte ranges its rows need, in rounds of coalesced reads; 0 reads every segment whole.",
        OC_NUMBER_KNOB(take_partial_segment_bytes, 0, TiB, true)},
    Knob{"take_partial_tail_bytes", "ONECOPY_TAKE_PARTIAL_TAIL_BYTES", "4KiB",
         "Bytes a take reads first from the end of a segment it reads in part, to find the "
         "array tree there (a larger tree costs one more round).",
         OC_NUMBER_KNOB(take_partial_tail_bytes, 64, 64 * MiB, true)},
    Knob{"take_cache_bytes", "ONECOPY_TAKE_CACHE_BYTES", "128MiB",
         "Bytes of the segments takes read in part that the process keeps for later takes of the "
         "same open file (least recently used out first; format/take_cache.hpp); 0 keeps none.",
         OC_NUMBER_KNOB(take_cache_bytes, 0, TiB, true)},
    Knob{"buffer_recycle_bytes", "ONECOPY_BUFFER_RECYCLE_BYTES", "2GiB",
         "Bytes of freed decode buffers of 64 KiB and more the process keeps to reuse (pages it "
         "has touched: no page fault and no kernel zeroing for the next scan), at most a "
         "sixteenth of the machine's memory; 0 gives every one back at once. A scan whose "
         "buffers do not all fit pays for the rest in page faults: a full scan of TPC-H "
         "lineitem SF 1 frees between 1 and 1.5 GiB of them.",
         OC_NUMBER_KNOB(buffer_recycle_bytes, 0, TiB, true)},
    Knob{"cache_memory_bytes", "ONECOPY_CACHE_MEMORY_BYTES", "1GiB",
         "Bytes of S3 objects the process keeps in memory for every later read of the same "
         "object version (ETag): in onecopyd, shared by every client (format/byte_cache.hpp; "
         "least recently used out first, bytes in use pinned); 0 keeps none.",
         OC_NUMBER_KNOB(cache_memory_bytes, 0, 64 * TiB, true)},
    Knob{"cache_dir", "ONECOPY_CACHE_DIR", "",
         "Directory of the byte cache's disk tier (a local NVMe); empty: $CACHE_DIRECTORY, which "
         "onecopyd.service's CacheDirectory=onecopy sets, else no disk tier.",
         apply_text<&Defaults::cache_dir>},
    Knob{"cache_disk_bytes", "ONECOPY_CACHE_DISK_BYTES", "32GiB",
         "Bytes the byte cache's disk tier may hold in cache_dir (least recently used out "
         "first); 0 turns the tier off.",
         OC_NUMBER_KNOB(cache_disk_bytes, 0, 1024 * TiB, true)},
    Knob{"metadata_cache_bytes", "ONECOPY_METADATA_CACHE_BYTES", "256MiB",
         "Bytes of opened S3 files (footer, layout tree, statistics, keyed by object and "
         "ETag) the process keeps for later opens of the same version (least recently used out "
         "first); 0 keeps none.",
         OC_NUMBER_KNOB(metadata_cache_bytes, 0, TiB, true)},
    Knob{"footer_max_bytes", "ONECOPY_FOOTER_MAX_BYTES", "64MiB",
         "Largest tail of a file its footer (dtype, layout, statistics, segment map) may occupy; "
         "a footer reaching further is corrupt, found after at most two reads.",
         OC_NUMBER_KNOB(footer_max_bytes, 64 * KiB, 4 * GiB, true)},
    Knob{"max_decoded_bytes", "ONECOPY_MAX_DECODED_BYTES", "8GiB",
         "Largest decoded size of one array (decompression-bomb guard).",
         OC_NUMBER_KNOB(max_decoded_bytes, MiB, TiB, true)},
    Knob{"cls_max_request_bytes", "ONECOPY_CLS_MAX_REQUEST_BYTES", "1MiB",
         "Object class onecopy (in the OSD): largest scan request accepted; larger is -E2BIG.",
         OC_NUMBER_KNOB(cls_max_request_bytes, 4 * KiB, 64 * MiB, true)},
    Knob{"cls_max_result_bytes", "ONECOPY_CLS_MAX_RESULT_BYTES", "64MiB",
         "Object class onecopy: largest Arrow IPC result of one scan call (a request may ask for "
         "less, never more); a result that would pass it is -EFBIG.",
         OC_NUMBER_KNOB(cls_max_result_bytes, 64 * KiB, 2 * GiB - 1, true)},
    Knob{"cls_max_decoded_bytes", "ONECOPY_CLS_MAX_DECODED_BYTES", "512MiB",
         "Object class onecopy: the OSD process's max_decoded_bytes (one decoded array at most).",
         OC_NUMBER_KNOB(cls_max_decoded_bytes, MiB, TiB, true)},
    Knob{"ipc_zstd_level", "ONECOPY_IPC_ZSTD_LEVEL", "1",
         "zstd level of compressed Arrow IPC bodies (the object class's answers): 1 fastest, "
         "19 smallest.",
         OC_NUMBER_KNOB(ipc_zstd_level, 1, 19, false)},
    Knob{"max_array_depth", "ONECOPY_MAX_ARRAY_DEPTH", "64",
         "Deepest encoding or layout nesting accepted from a file (recursion guard).",
         OC_NUMBER_KNOB(max_array_depth, 4, 1024, false)},
    Knob{
        "max_expr_depth", "ONECOPY_MAX_EXPR_DEPTH", "128",
        "Deepest nesting of parentheses and NOT accepted in a filter expression (recursion guard).",
        OC_NUMBER_KNOB(max_expr_depth, 4, 4096, false)},
    Knob{"scan_batch_rows", "ONECOPY_SCAN_BATCH_ROWS", "0",
         "Rows per scan batch; 0 yields the file's own chunks.",
         OC_NUMBER_KNOB(scan_batch_rows, 0, uint64_t{1} << 40, false)},
    Knob{"scan_readahead_splits", "ONECOPY_SCAN_READAHEAD_SPLITS", "4",
         "Splits whose segments a scan fetches ahead of decoding (Vortex: 4 per worker).",
         OC_NUMBER_KNOB(scan_readahead_splits, 1, 1024, false)},
    Knob{"scan_decode_threads", "ONECOPY_SCAN_DECODE_THREADS", "0",
         "Threads that decode a scan's columns side by side; 0 uses one per CPU core.",
         OC_NUMBER_KNOB(scan_decode_threads, 0, 1024, false)},
    Knob{"shard_unit_rows", "ONECOPY_SHARD_UNIT_ROWS", "65536",
         "Longest unit of work a sharded scan hands out: chunks are cut into pieces of at most "
         "this many rows before units are shuffled and dealt to ranks and workers.",
         OC_NUMBER_KNOB(shard_unit_rows, 1, uint64_t{1} << 40, false)},
    Knob{"plan_max_pieces", "ONECOPY_PLAN_MAX_PIECES", "2097152",
         "Most pieces one scan plan may cut a file into (units of a sharded plan, batches of a "
         "scan); a finer cut (a small unit_rows or batch_rows) is an invalid error naming it.",
         OC_NUMBER_KNOB(plan_max_pieces, 1, uint64_t{1} << 32, false)},
    Knob{"gpu_streams", "ONECOPY_GPU_STREAMS", "4",
         "CUDA streams a GPU decode session spreads its decodes over (vortex-cuda: 4).",
         OC_NUMBER_KNOB(gpu_streams, 1, 64, false)},
    Knob{"gpu_staging_bytes", "ONECOPY_GPU_STAGING_BYTES", "64MiB",
         "Pinned host memory per GPU decode stream for staging uploads; larger decodes pin their "
         "own.",
         OC_NUMBER_KNOB(gpu_staging_bytes, 1 * MiB, 4 * GiB, true)},
    Knob{"http_max_header_bytes", "ONECOPY_HTTP_MAX_HEADER_BYTES", "64KiB",
         "Largest HTTP response head (status line and headers) accepted from a server.",
         OC_NUMBER_KNOB(http_max_header_bytes, 1 * KiB, 16 * MiB, true)},
    Knob{"http_connect_timeout_ms", "ONECOPY_HTTP_CONNECT_TIMEOUT_MS", "10000",
         "TCP connect plus TLS handshake deadline, in milliseconds.",
         OC_NUMBER_KNOB(http_connect_timeout_ms, 1, 600'000, false)},
    Knob{"http_first_byte_timeout_ms", "ONECOPY_HTTP_FIRST_BYTE_TIMEOUT_MS", "30000",
         "Deadline from a request's last byte sent to the response's first byte received.",
         OC_NUMBER_KNOB(http_first_byte_timeout_ms, 1, 3'600'000, false)},
    Knob{"http_stall_timeout_ms", "ONECOPY_HTTP_STALL_TIMEOUT_MS", "30000",
         "A response that delivers no byte for this long is abandoned (AWS CRT: 30 s).",
         OC_NUMBER_KNOB(http_stall_timeout_ms, 1, 3'600'000, false)},
    Knob{"http_request_timeout_ms", "ONECOPY_HTTP_REQUEST_TIMEOUT_MS", "300000",
         "One HTTP exchange (connect, request, whole response) is abandoned after this long, "
         "however steadily bytes arrive; it is then retried like a stall.",
         OC_NUMBER_KNOB(http_request_timeout_ms, 1, 86'400'000, false)},
    Knob{"http_multirange_max_parts", "ONECOPY_HTTP_MULTIRANGE_MAX_PARTS", "32",
         "http(s) URL sources: ranges asked for in one GET, answered as multipart/byteranges "
         "where the server does (probed per endpoint; S3 never is); 0 or 1 = one range a GET.",
         OC_NUMBER_KNOB(http_multirange_max_parts, 0, 1024, false)},
    Knob{"net_reactor_threads", "ONECOPY_NET_REACTOR_THREADS", "0",
         "I/O reactor threads, each one io_uring multiplexing its share of the requests in "
         "flight; 0 = one per core. The thread count does not grow with the in-flight cap.",
         OC_NUMBER_KNOB(net_reactor_threads, 0, 1024, false)},
    Knob{"dns_cache_ttl_ms", "ONECOPY_DNS_CACHE_TTL_MS", "30000",
         "How long a resolved host name is reused (aws-c-io: 30 s); 0 resolves every connect.",
         OC_NUMBER_KNOB(dns_cache_ttl_ms, 0, 86'400'000, false)},
    Knob{"dns_resolver_threads", "ONECOPY_DNS_RESOLVER_THREADS", "2",
         "Threads that run getaddrinfo for the reactors, which wait for them with the connect "
         "deadline and never block on a lookup.",
         OC_NUMBER_KNOB(dns_resolver_threads, 1, 64, false)},
    Knob{"http_connections_per_endpoint", "ONECOPY_HTTP_CONNECTIONS_PER_ENDPOINT", "64",
         "Keep-alive connections kept open per endpoint (host, port, scheme).",
         OC_NUMBER_KNOB(http_connections_per_endpoint, 1, 4096, false)},
    Knob{"net_pool_bytes", "ONECOPY_NET_POOL_BYTES", "256MiB",
         "Pinned, io_uring-registered destination memory for response bodies; 0 disables it.",
         OC_NUMBER_KNOB(net_pool_bytes, 0, 64 * GiB, true)},
    Knob{"s3_max_requests_in_flight", "ONECOPY_S3_MAX_REQUESTS_IN_FLIGHT", "64",
         "Global cap on S3 requests in flight, shared fairly between scans (KvikIO: unbounded "
         "loses 40%).",
         OC_NUMBER_KNOB(s3_max_requests_in_flight, 1, 4096, false)},
    Knob{"s3_max_attempts", "ONECOPY_S3_MAX_ATTEMPTS", "5",
         "Attempts per S3 request, the first included, before its error is returned.",
         OC_NUMBER_KNOB(s3_max_attempts, 1, 100, false)},
    Knob{"s3_backoff_base_ms", "ONECOPY_S3_BACKOFF_BASE_MS", "100",
         "Retry backoff: full jitter over base * 2^attempt milliseconds.",
         OC_NUMBER_KNOB(s3_backoff_base_ms, 0, 60'000, false)},
    Knob{"s3_backoff_max_ms", "ONECOPY_S3_BACKOFF_MAX_MS", "20000",
         "Retry backoff ceiling in milliseconds (AWS SDK standard mode: 20 s).",
         OC_NUMBER_KNOB(s3_backoff_max_ms, 0, 600'000, false)},
    Knob{"s3_hedge_after_ms", "ONECOPY_S3_HEDGE_AFTER_MS", "0",
         "Re-issue a ranged GET still unfinished after this many ms, first answer wins; 0 = off.",
         OC_NUMBER_KNOB(s3_hedge_after_ms, 0, 3'600'000, false)},
    Knob{"s3_get_part_bytes", "ONECOPY_S3_GET_PART_BYTES", "16MiB",
         "Range size when one large object is downloaded in parallel (AWS advice: 8 or 16 MB).",
         OC_NUMBER_KNOB(s3_get_part_bytes, 64 * KiB, 5 * GiB, true)},
    Knob{"s3_multipart_threshold", "ONECOPY_S3_MULTIPART_THRESHOLD", "16MiB",
         "Uploads at least this large use multipart upload.",
         OC_NUMBER_KNOB(s3_multipart_threshold, 5 * MiB, 5 * GiB, true)},
    Knob{"s3_multipart_part_bytes", "ONECOPY_S3_MULTIPART_PART_BYTES", "8MiB",
         "Multipart upload part size (S3: 5 MiB to 5 GiB; AWS CLI and CRT: 8 MiB).",
         OC_NUMBER_KNOB(s3_multipart_part_bytes, 5 * MiB, 5 * GiB, true)},
    Knob{"rados_pushdown", "ONECOPY_RADOS_PUSHDOWN", "auto",
         "Scans of rados:// objects run in the OSDs (object class onecopy): auto where the class "
         "is loaded and the scan filters or projects, on for every scan, off never.",
         apply_rados_pushdown},
    Knob{"rados_ops_in_flight", "ONECOPY_RADOS_OPS_IN_FLIGHT", "8",
         "RADOS operations (reads, pushed-down scans) one scan or read batch keeps in flight.",
         OC_NUMBER_KNOB(rados_ops_in_flight, 1, 1024, false)},
    Knob{"rados_pushdown_rows", "ONECOPY_RADOS_PUSHDOWN_ROWS", "1048576",
         "Rows one pushed-down call scans at most: a file's range is cut into calls of about "
         "this many rows at its chunk boundaries.",
         OC_NUMBER_KNOB(rados_pushdown_rows, 1, uint64_t{1} << 40, false)},
    Knob{"rados_pushdown_compression", "ONECOPY_RADOS_PUSHDOWN_COMPRESSION", "zstd",
         "Pushed-down scans ask the OSD for Arrow IPC bodies compressed with zstd (level "
         "ipc_zstd_level of the OSD) or none.",
         apply_rados_pushdown_compression},
    Knob{"rados_connect_timeout_ms", "ONECOPY_RADOS_CONNECT_TIMEOUT_MS", "10000",
         "How long connecting to the Ceph monitors may take (librados counts whole seconds: "
         "rounded up).",
         OC_NUMBER_KNOB(rados_connect_timeout_ms, 1, 3'600'000, false)},
    Knob{"rados_op_timeout_ms", "ONECOPY_RADOS_OP_TIMEOUT_MS", "60000",
         "How long one RADOS operation may wait for its OSD (an OSD down past it fails the "
         "operation with a timeout; whole seconds, rounded up).",
         OC_NUMBER_KNOB(rados_op_timeout_ms, 1, 3'600'000, false)},
    Knob{"rados_op_attempts", "ONECOPY_RADOS_OP_ATTEMPTS", "3",
         "Attempts of one pushed-down call that timed out or found its OSD restarting.",
         OC_NUMBER_KNOB(rados_op_attempts, 1, 100, false)},
    Knob{"credentials_refresh_margin_s", "ONECOPY_CREDENTIALS_REFRESH_MARGIN_S", "300",
         "Temporary credentials are refreshed this many seconds before they expire.",
         OC_NUMBER_KNOB(credentials_refresh_margin_s, 0, 86'400, false)},
    Knob{"credentials_fetch_timeout_ms", "ONECOPY_CREDENTIALS_FETCH_TIMEOUT_MS", "1000",
         "Deadline for each container-credentials or EC2 metadata request (AWS SDKs: 1 s).",
         OC_NUMBER_KNOB(credentials_fetch_timeout_ms, 1, 600'000, false)},
    Knob{"imds_token_ttl_s", "ONECOPY_IMDS_TOKEN_TTL_S", "21600",
         "Lifetime requested for an IMDSv2 session token, in seconds (1..21600).",
         OC_NUMBER_KNOB(imds_token_ttl_s, 1, 21'600, false)},
    Knob{"daemon_socket",
         "ONECOPY_SOCKET",
         "/run/onecopy/onecopyd.sock",
         "Unix socket onecopyd listens on and clients connect to (clients: set and empty reads "
         "in the client's process).",
         apply_daemon_socket,
         {},
         /*empty_env_is_unset=*/true},
    Knob{"daemon_max_clients", "ONECOPY_DAEMON_MAX_CLIENTS", "256",
         "Connections onecopyd serves at once; more are accepted and closed at once.",
         OC_NUMBER_KNOB(daemon_max_clients, 1, 65'536, false)},
    Knob{"daemon_client_max_batches_in_flight", "ONECOPY_DAEMON_CLIENT_MAX_BATCHES_IN_FLIGHT", "8",
         "Unreleased batches one client may hold before its scans pause (backpressure).",
         OC_NUMBER_KNOB(daemon_client_max_batches_in_flight, 1, 65'536, false)},
    Knob{"daemon_client_max_bytes_in_flight", "ONECOPY_DAEMON_CLIENT_MAX_BYTES_IN_FLIGHT", "1GiB",
         "Unreleased slab bytes one client may hold before its scans pause (one batch always "
         "goes).",
         OC_NUMBER_KNOB(daemon_client_max_bytes_in_flight, MiB, TiB, true)},
    Knob{"daemon_max_message_bytes", "ONECOPY_DAEMON_MAX_MESSAGE_BYTES", "1MiB",
         "Largest protocol message accepted; a larger one disconnects its client.",
         OC_NUMBER_KNOB(daemon_max_message_bytes, 4 * KiB, 64 * MiB, true)},
    Knob{"daemon_pool_bytes", "ONECOPY_DAEMON_POOL_BYTES", "16GiB",
         "Slab bytes all clients together may hold unreleased; scans pause beyond it.",
         OC_NUMBER_KNOB(daemon_pool_bytes, MiB, 64 * TiB, true)},
    Knob{"daemon_device_slab_bytes", "ONECOPY_DAEMON_DEVICE_SLAB_BYTES", "256MiB",
         "Size of each GPU memory slab a client's device batches are placed in (rounded up to the "
         "CUDA allocation granularity); a larger batch gets a slab of its own size.",
         OC_NUMBER_KNOB(daemon_device_slab_bytes, 2 * MiB, 64 * GiB, true)},
    Knob{"daemon_device_pool_bytes", "ONECOPY_DAEMON_DEVICE_POOL_BYTES", "8GiB",
         "GPU memory slab bytes all clients together may hold on each device; device scans "
         "pause beyond it.",
         OC_NUMBER_KNOB(daemon_device_pool_bytes, 2 * MiB, 64 * TiB, true)},
    Knob{"daemon_allowed_uids", "ONECOPY_DAEMON_ALLOWED_UIDS", "*",
         "Peer uids (SO_PEERCRED) allowed to connect: comma-separated, or * for any.",
         [](Defaults& d, std::string_view t) {
           return apply_id_list<&Defaults::daemon_allowed_uids>(d, t, "daemon_allowed_uids");
         }},
    Knob{"daemon_allowed_gids", "ONECOPY_DAEMON_ALLOWED_GIDS", "*",
         "Peer gids allowed to connect (either list admits a peer): comma-separated, or *.",
         [](Defaults& d, std::string_view t) {
           return apply_id_list<&Defaults::daemon_allowed_gids>(d, t, "daemon_allowed_gids");
         }},
    Knob{"daemon_watchdog_ms", "ONECOPY_DAEMON_WATCHDOG_MS", "0",
         "WATCHDOG=1 interval without systemd's WATCHDOG_USEC; 0 = half of WATCHDOG_USEC or off.",
         OC_NUMBER_KNOB(daemon_watchdog_ms, 0, 3'600'000, false)},
    Knob{"daemon_worker_threads", "ONECOPY_DAEMON_WORKER_THREADS", "0",
         "Threads onecopyd opens files and decodes batches on, off its epoll thread; 0 = cores.",
         OC_NUMBER_KNOB(daemon_worker_threads, 0, 1024, false)},
    Knob{"daemon_client_max_open_files", "ONECOPY_DAEMON_CLIENT_MAX_OPEN_FILES", "64",
         "Files one connection may have open (or opening); another Open is an Error reply.",
         OC_NUMBER_KNOB(daemon_client_max_open_files, 1, 65'536, false)},
    Knob{"daemon_kept_files", "ONECOPY_DAEMON_KEPT_FILES", "64",
         "Local files onecopyd keeps open after the Open that opened them, for the next Open of "
         "the same path and unchanged file, by any client: its footer and what takes read of it "
         "are ready (a descriptor each); 0 keeps none.",
         OC_NUMBER_KNOB(daemon_kept_files, 0, 65'536, false)},
    Knob{"daemon_client_max_scans", "ONECOPY_DAEMON_CLIENT_MAX_SCANS", "16",
         "Scans one connection may have active at once; another Scan is an Error reply.",
         OC_NUMBER_KNOB(daemon_client_max_scans, 1, 65'536, false)},
    Knob{"daemon_slab_bytes", "ONECOPY_DAEMON_SLAB_BYTES", "64MiB",
         "Size of each shared-memory slab a client's batches are placed in (a multiple of 2 MiB; "
         "hugepages when available); a larger batch gets a slab of its own.",
         [](Defaults& d, std::string_view t) -> Result<void> {
           OC_TRY((apply_number<&Defaults::daemon_slab_bytes, 2 * MiB, 64 * GiB, true>(
               d, t, "daemon_slab_bytes")));
           OC_EXPECT(d.daemon_slab_bytes % (2 * MiB) == 0, invalid,
                     "daemon_slab_bytes: {} is not a multiple of 2 MiB (the hugepage size)",
                     d.daemon_slab_bytes);
           return {};
         }},
    Knob{"daemon_metrics_port", "ONECOPY_DAEMON_METRICS_PORT", "0",
         "TCP port onecopyd answers GET /metrics on (Prometheus text), on the loopback address "
         "only; 0 = off.",
         OC_NUMBER_KNOB(daemon_metrics_port, 0, 65'535, false)},
    Knob{"daemon_metrics_address", "ONECOPY_DAEMON_METRICS_ADDRESS", "127.0.0.1",
         "Address of the metrics port: an IPv4 loopback address (127.0.0.0/8) only.",
         apply_loopback_address},
    Knob{"daemon_metrics_timeout_ms", "ONECOPY_DAEMON_METRICS_TIMEOUT_MS", "2000",
         "A metrics connection that has not sent its whole request by then is closed.",
         OC_NUMBER_KNOB(daemon_metrics_timeout_ms, 1, 600'000, false)},
    Knob{"daemon_metrics_max_request_bytes", "ONECOPY_DAEMON_METRICS_MAX_REQUEST_BYTES", "8KiB",
         "Largest HTTP request the metrics port reads; a larger one is answered 400 and closed.",
         OC_NUMBER_KNOB(daemon_metrics_max_request_bytes, 1 * KiB, 1 * MiB, true)},
    Knob{"daemon_metrics_max_connections", "ONECOPY_DAEMON_METRICS_MAX_CONNECTIONS", "8",
         "Metrics port connections served at once; more are accepted and closed at once.",
         OC_NUMBER_KNOB(daemon_metrics_max_connections, 1, 1024, false)},
    Knob{"daemon_io_threads", "ONECOPY_DAEMON_IO_THREADS", "4",
         "Threads onecopyd opens files, lists patterns and plans scans on (work that may wait on "
         "the network); one user's requests run on at most half of them at once.",
         OC_NUMBER_KNOB(daemon_io_threads, 1, 1024, false)},
    Knob{"daemon_client_max_requests", "ONECOPY_DAEMON_CLIENT_MAX_REQUESTS", "8",
         "Opens, listings and scan plans one connection may have running at once (a cancelled "
         "one counts until its work has ended); another is an Error reply.",
         OC_NUMBER_KNOB(daemon_client_max_requests, 1, 65'536, false)},
    Knob{"daemon_uid_max_clients", "ONECOPY_DAEMON_UID_MAX_CLIENTS", "128",
         "Connections one user (peer uid) may have at once; more are refused with an Error.",
         OC_NUMBER_KNOB(daemon_uid_max_clients, 1, 65'536, false)},
    Knob{"daemon_uid_max_pool_bytes", "ONECOPY_DAEMON_UID_MAX_POOL_BYTES", "8GiB",
         "Slab bytes the connections of one user may hold together (by default half the pool, "
         "so that another user is always served); that user's scans wait beyond it.",
         OC_NUMBER_KNOB(daemon_uid_max_pool_bytes, MiB, 64 * TiB, true)},
    Knob{"daemon_pool_wait_ms", "ONECOPY_DAEMON_POOL_WAIT_MS", "30000",
         "How long a decoded batch may wait for room in the slab pool before its scan fails "
         "with an error naming the pool limits.",
         OC_NUMBER_KNOB(daemon_pool_wait_ms, 1, 3'600'000, false)},
    Knob{"daemon_max_batch_rows", "ONECOPY_DAEMON_MAX_BATCH_ROWS", "1048576",
         "Largest batch_rows a Scan may ask for; more is an Error reply naming this knob.",
         OC_NUMBER_KNOB(daemon_max_batch_rows, 1, uint64_t{1} << 40, false)},
    Knob{"daemon_max_scan_columns", "ONECOPY_DAEMON_MAX_SCAN_COLUMNS", "16384",
         "Most column names a Scan may list; more is an Error reply naming this knob.",
         OC_NUMBER_KNOB(daemon_max_scan_columns, 1, 1 << 24, false)},
    Knob{"daemon_list_max_entries", "ONECOPY_DAEMON_LIST_MAX_ENTRIES", "100000",
         "Most files a List may name; a pattern that names more is an Error reply.",
         OC_NUMBER_KNOB(daemon_list_max_entries, 1, 1 << 30, false)},
    Knob{"daemon_client_max_queued_bytes", "ONECOPY_DAEMON_CLIENT_MAX_QUEUED_BYTES", "4MiB",
         "Replies queued for a client that is not reading them; beyond this onecopyd reads no "
         "more of its requests until it catches up.",
         OC_NUMBER_KNOB(daemon_client_max_queued_bytes, 64 * KiB, GiB, true)},
    Knob{"daemon_messages_per_wakeup", "ONECOPY_DAEMON_MESSAGES_PER_WAKEUP", "64",
         "Messages read from one client per turn of the event loop, so that a flood from one "
         "client cannot hold up the others.",
         OC_NUMBER_KNOB(daemon_messages_per_wakeup, 1, 65'536, false)},
    Knob{"daemon_fd_reserve", "ONECOPY_DAEMON_FD_RESERVE", "256",
         "Descriptors kept back from clients for onecopyd's own use (rings, S3 connections, "
         "timers); client connections, their files and slabs get RLIMIT_NOFILE minus this.",
         OC_NUMBER_KNOB(daemon_fd_reserve, 16, 1 << 20, false)},
    Knob{"daemon_accept_pause_ms", "ONECOPY_DAEMON_ACCEPT_PAUSE_MS", "100",
         "At the descriptor limit onecopyd stops accepting connections for this long, then "
         "looks again (rather than spinning on EMFILE).",
         OC_NUMBER_KNOB(daemon_accept_pause_ms, 1, 60'000, false)},
    Knob{"daemon_s3_grants", "ONECOPY_DAEMON_S3_GRANTS", "",
         "Which peers may read which S3 prefixes through onecopyd: rules 'WHO: s3://bucket/prefix "
         "...' joined by ';', WHO being *, uid=N[,N] or gid=N[,N]; empty (the default) grants "
         "none.",
         apply_text<&Defaults::daemon_s3_grants>, "; "},
    Knob{"daemon_rados_grants", "ONECOPY_DAEMON_RADOS_GRANTS", "",
         "Which peers may read which RADOS objects through onecopyd: rules 'WHO: "
         "rados://pool/prefix ...' joined by ';', WHO being *, uid=N[,N] or gid=N[,N]; empty (the "
         "default) grants none.",
         apply_text<&Defaults::daemon_rados_grants>, "; "},
    Knob{"daemon_http_hosts", "ONECOPY_DAEMON_HTTP_HOSTS", "",
         "Hosts whose http(s) URLs clients may read through onecopyd: names or host:port, comma-"
         "separated; * admits any host with public addresses only. Empty (the default): none.",
         apply_text<&Defaults::daemon_http_hosts>, ", "},
    Knob{"client_connect_timeout_ms", "ONECOPY_CLIENT_CONNECT_TIMEOUT_MS", "10000",
         "How long the client library waits for onecopyd to accept its connection.",
         OC_NUMBER_KNOB(client_connect_timeout_ms, 1, 3'600'000, false)},
    Knob{"client_reply_timeout_ms", "ONECOPY_CLIENT_REPLY_TIMEOUT_MS", "300000",
         "How long the client library waits for each reply or batch from onecopyd; 0 waits "
         "forever.",
         OC_NUMBER_KNOB(client_reply_timeout_ms, 0, 86'400'000, false)},
};

#undef OC_NUMBER_KNOB

Defaults g_defaults = builtin_defaults();

}  // namespace

std::span<const Knob> knob_table() noexcept { return kKnobs; }

Defaults builtin_defaults() {
  Defaults d{};
  for (const Knob& k : kKnobs) {
    // The built-in strings are validated by tests/config/test_defaults.cpp.
    (void)k.apply(d, k.default_value);
  }
  return d;
}

Result<Defaults> defaults_from_env(
    const std::function<std::optional<std::string>(std::string_view)>& getenv) {
  Defaults d = builtin_defaults();
  for (const Knob& k : kKnobs) {
    if (auto v = getenv(k.env); v && !(v->empty() && k.empty_env_is_unset)) {
      auto r = k.apply(d, *v);
      if (!r.ok()) return std::move(r.error()).with_context(fmt::format("from ${}", k.env));
    }
  }
  return d;
}

Result<void> load_defaults_from_env() {
  OC_ASSIGN_OR_RETURN(g_defaults, defaults_from_env([](std::string_view name) {
                        const char* v = std::getenv(std::string(name).c_str());
                        return v ? std::optional<std::string>(v) : std::nullopt;
                      }));
  return {};
}

void set_defaults(const Defaults& d) { g_defaults = d; }

const Defaults& defaults() noexcept { return g_defaults; }

Result<uint64_t> parse_size(std::string_view text) {
  uint64_t n = 0;
  const char* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, n);
  OC_EXPECT(ec == std::errc() && p != text.data(), invalid, "expected a size, got '{}'", text);
  const std::string unit = lower(std::string_view(p, static_cast<size_t>(end - p)));
  uint64_t mult = 0;
  if (unit.empty() || unit == "b")
    mult = 1;
  else if (unit == "k" || unit == "kb" || unit == "kib")
    mult = KiB;
  else if (unit == "m" || unit == "mb" || unit == "mib")
    mult = MiB;
  else if (unit == "g" || unit == "gb" || unit == "gib")
    mult = GiB;
  else if (unit == "t" || unit == "tb" || unit == "tib")
    mult = TiB;
  OC_EXPECT(mult != 0, invalid, "unknown size unit in '{}'", text);
  OC_EXPECT(n <= UINT64_MAX / mult, invalid, "size '{}' overflows 64 bits", text);
  return n * mult;
}

}  // namespace oc
