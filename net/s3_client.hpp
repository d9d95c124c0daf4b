// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief The S3 client: signed requests with retries, validated ranged GETs into pinned memory.
///
/// Every call is one logical request that may take several attempts, run as a job of the global
/// `Scheduler` (on a reactor, under the in-flight cap) whichever thread makes it. Attempts are
/// retried with exponential backoff and full jitter (`s3_backoff_base_ms`, `s3_backoff_max_ms`,
/// at most `s3_max_attempts`) on connection errors, resets, timeouts, truncated bodies, 5xx and
/// 429 (which covers 503 SlowDown); the backoff is a reactor timer, holding no thread and no
/// connection. CreateMultipartUpload is not resent once it went out (a second upload would be
/// left behind); a failed CompleteMultipartUpload is retried only after a HEAD shows the object
/// does not already carry the ETag its parts make. A ranged GET that breaks mid-body resumes from
/// the first missing byte. Before a body byte is placed, the response is checked: the status,
/// `Content-Range` against the request and `Content-Length` against the range. Every range of an
/// object is pinned to one ETag with `If-Match`, so an object replaced mid-read fails with
/// `Errc::corrupt` and never yields mixed bytes. A request that finally fails names the method,
/// URL, range, HTTP status and S3 error code; a 404 says "bucket does not exist" or "no such key"
/// (for a HEAD, which has no body, after a one-key listing of the bucket). A credentials chain
/// that found nothing fails the request at once, naming every source it tried: never retried.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "config/error.hpp"
#include "net/byteranges.hpp"
#include "net/connection.hpp"
#include "net/credentials.hpp"
#include "net/http_client.hpp"
#include "net/s3_endpoint.hpp"
#include "net/s3_xml.hpp"

namespace oc::net {

class Scheduler;

struct S3ClientConfig {
  S3Endpoint endpoint;
  std::shared_ptr<CredentialsProvider> credentials;  ///< null: anonymous (unsigned) requests
  TlsConfig tls = TlsConfig::from_env();
  HttpTimeouts timeouts = HttpTimeouts::from_defaults();
  /// Runs the requests; null means `Scheduler::global()`. Must outlive the client.
  Scheduler* scheduler = nullptr;
  /// Keep-alive connections per endpoint; 0 means `http_connections_per_endpoint`.
  uint32_t connections_per_endpoint = 0;
  /// Resolves endpoint, region and credentials as the AWS SDKs do (see s3_endpoint.hpp and
  /// credentials.hpp), from the process environment and ~/.aws.
  [[nodiscard]] static Result<S3ClientConfig> from_environment();
};

/// Totals over the client's lifetime; every field only grows.
struct S3Counters {
  std::atomic<uint64_t> requests{0};  ///< logical requests
  std::atomic<uint64_t> attempts{0};  ///< HTTP exchanges, retries included
  std::atomic<uint64_t> retries{0};
  std::atomic<uint64_t> failures{0};        ///< requests that returned an error
  std::atomic<uint64_t> bytes_received{0};  ///< body bytes placed in destinations
  std::atomic<uint64_t> bytes_sent{0};      ///< request body bytes
  std::atomic<uint64_t> copied_bytes{0};    ///< body bytes copied in user space after the kernel
  std::atomic<uint64_t> ttfb_ns_total{0};   ///< summed time to first byte
  std::atomic<uint64_t> ttfb_ns_max{0};
  std::atomic<uint64_t> cpu_ns{0};  ///< CPU time of the threads while in requests
  std::atomic<uint64_t> hedges{0};  ///< hedged re-issues of straggling ranges
  std::atomic<uint64_t> hedges_won{0};
  std::atomic<uint64_t> multirange_gets{0};  ///< GETs that carried several ranges and got them
};

/// Per-request accounting, returned with results.
struct RequestStats {
  uint32_t attempts = 0;
  uint64_t bytes = 0;
  uint64_t copied_bytes = 0;
  std::chrono::nanoseconds ttfb{};
  std::chrono::nanoseconds cpu{};
};

struct ObjectInfo {
  std::string key;
  uint64_t size = 0;
  std::string etag;
  std::string last_modified;
};

struct RangeRead {
  std::string etag;          ///< of the object the bytes came from
  uint64_t object_size = 0;  ///< from Content-Range
  RequestStats stats;
};

/// Cancels a request from another thread (hedging): its connection is shut down.
class CancelToken {
 public:
  void cancel();
  [[nodiscard]] bool cancelled() const noexcept { return cancelled_.load(); }

 private:
  friend class S3Client;
  void attach(Connection* c);
  std::atomic<bool> cancelled_{false};
  std::mutex mu_;
  Connection* active_ = nullptr;
};

/// An object addressed either by bucket and key (signed requests) or by a presigned or public
/// http(s) URL (sent unsigned).
struct ObjectRef {
  std::string bucket, key;
  std::string url;  ///< set for URL-addressed objects
  /// For `url`: connect to public addresses only (ConnectOptions::public_only).
  bool public_only = false;
  [[nodiscard]] std::string describe() const;  ///< "s3://b/k", or the URL without its query
};

class S3Client : public std::enable_shared_from_this<S3Client> {
 public:
  [[nodiscard]] static Result<std::shared_ptr<S3Client>> create(S3ClientConfig config);
  ~S3Client();

  /// HeadObject. `Errc::not_found` for a missing object.
  [[nodiscard]] Result<ObjectInfo> head_object(std::string_view bucket, std::string_view key);

  /// GetObject of bytes [offset, offset + dest.size()) straight into @p dest. With @p if_match,
  /// the object must still have that ETag.
  [[nodiscard]] Result<RangeRead> get_range(std::string_view bucket, std::string_view key,
                                            uint64_t offset, std::span<std::byte> dest,
                                            std::string_view if_match = {},
                                            CancelToken* cancel = nullptr);

  /// A GET of bytes [offset, offset + dest.size()) from a presigned (or public) URL, unsigned.
  /// With @p public_only, only public addresses are connected to (ConnectOptions::public_only).
  [[nodiscard]] Result<RangeRead> get_url_range(std::string_view url, uint64_t offset,
                                                std::span<std::byte> dest,
                                                std::string_view if_match = {},
                                                bool public_only = false);
  /// One GET of many ranges of a URL (`Range: bytes=a-b,c-d,...`), whose multipart/byteranges
  /// answer is deframed straight into each range's slot. `Errc::unsupported` when the server
  /// answers otherwise (the whole object, or one merged range), before any byte is placed.
  [[nodiscard]] Result<RequestStats> get_url_ranges(std::string_view url,
                                                    std::span<const RangeFetch> parts,
                                                    std::string_view if_match = {},
                                                    bool public_only = false);
  /// The object's size and ETag through a presigned GET URL (a 1-byte ranged GET: S3 refuses
  /// HEAD on a URL presigned for GET).
  [[nodiscard]] Result<ObjectInfo> stat_url(std::string_view url, bool public_only = false);

  /// The size and ETag of @p obj (HEAD, or a 1-byte GET for URLs).
  [[nodiscard]] Result<ObjectInfo> stat(const ObjectRef& obj);
  /// A ranged GET of @p obj, pinned to @p etag when non-empty.
  [[nodiscard]] Result<RangeRead> get(const ObjectRef& obj, uint64_t offset,
                                      std::span<std::byte> dest, std::string_view etag,
                                      CancelToken* cancel = nullptr);

  /// Reads every range of @p obj concurrently through the client's `Scheduler`, all pinned to
  /// @p etag. With `s3_hedge_after_ms` set, a range still running after that long is re-issued
  /// into scratch memory and the first answer wins (the loser is cancelled). Small ranges of a
  /// URL object go up to `http_multirange_max_parts` (and `s3_get_part_bytes`) to a GET, where
  /// the server answers multi-range requests with multipart/byteranges (probed per endpoint;
  /// never for S3, which answers them with the whole object). Call it from a plain thread, not from
  /// a scheduler job: it waits on a condition variable.
  [[nodiscard]] Result<void> fetch_ranges(const ObjectRef& obj, std::string_view etag,
                                          std::span<const RangeFetch> ranges);

  /// One ListObjectsV2 page.
  [[nodiscard]] Result<ListObjectsPage> list_page(std::string_view bucket, std::string_view prefix,
                                                  std::string_view delimiter,
                                                  std::string_view continuation,
                                                  uint32_t max_keys = 1000);
  /// Every page, concatenated; `invalid` once more than @p max_entries keys and prefixes came.
  [[nodiscard]] Result<ListObjectsPage> list_all(std::string_view bucket, std::string_view prefix,
                                                 std::string_view delimiter,
                                                 uint64_t max_entries = UINT64_MAX);

  /// PutObject with the body's SHA-256 signed; `Expect: 100-continue` for large bodies.
  /// @return the new ETag.
  [[nodiscard]] Result<std::string> put_object(std::string_view bucket, std::string_view key,
                                               std::span<const std::byte> body);

  [[nodiscard]] Result<std::string> create_multipart(std::string_view bucket, std::string_view key);
  [[nodiscard]] Result<std::string> upload_part(std::string_view bucket, std::string_view key,
                                                std::string_view upload_id, uint32_t part_number,
                                                std::span<const std::byte> body);
  [[nodiscard]] Result<std::string> complete_multipart(std::string_view bucket,
                                                       std::string_view key,
                                                       std::string_view upload_id,
                                                       std::span<const CompletedPart> parts);
  [[nodiscard]] Result<void> abort_multipart(std::string_view bucket, std::string_view key,
                                             std::string_view upload_id);

  /// A URL that lets its holder GET the object without credentials until it expires.
  [[nodiscard]] Result<std::string> presign_get(std::string_view bucket, std::string_view key,
                                                std::chrono::seconds expires);

  [[nodiscard]] const S3Counters& counters() const noexcept { return counters_; }
  [[nodiscard]] S3Counters& counters() noexcept { return counters_; }
  [[nodiscard]] const S3ClientConfig& config() const noexcept { return config_; }
  [[nodiscard]] ConnectionPool& pool() noexcept { return *pool_; }

 private:
  struct Call;
  explicit S3Client(S3ClientConfig config);
  Result<HttpResponse> perform(Call& call);
  Result<void> fetch_url_multirange(const ObjectRef& obj, std::string_view etag,
                                    std::span<const RangeFetch> ranges);
  Result<HttpResponse> perform_attempts(Call& call);
  [[nodiscard]] Scheduler& scheduler() const noexcept;
  Result<HttpResponse> attempt(Call& call, ExchangeProgress& progress, bool& reused);

  S3ClientConfig config_;
  std::unique_ptr<ConnectionPool> pool_;
  S3Counters counters_;
  MultirangeMemo multirange_;  // which endpoints answer multi-range GETs
};

}  // namespace oc::net
