// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief One HTTP/1.1 request/response exchange on a `Connection`, and a keep-alive pool.
///
/// The request head is formatted into a small inline buffer and sent with the body in one
/// gathered send; nothing is concatenated into intermediate strings. The response head is read
/// into a small scratch buffer of the exchange and parsed with llhttp. A successful (2xx) body then
/// goes to the caller's destination span:
/// - with `Content-Length`, the bytes that arrived with the head are copied once (counted in
///   `copied_bytes`) and the rest is received **directly into its slot**;
/// - a chunked body is received into the destination and de-framed there, in place.
/// Other bodies (S3 XML listings and errors) are collected as text, bounded.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "config/error.hpp"
#include "net/byteranges.hpp"
#include "net/connection.hpp"
#include "net/http_response.hpp"
#include "net/reactor.hpp"

namespace oc::net {

using HeaderField = std::pair<std::string_view, std::string_view>;

struct HttpRequest {
  std::string_view method;               ///< "GET", "HEAD", "PUT", "POST", "DELETE"
  std::string_view target;               ///< origin-form, already percent-encoded: "/b/k?x=1"
  std::string_view host;                 ///< the Host header value
  std::span<const HeaderField> headers;  ///< without Host and Content-Length (added here)
  std::span<const std::byte> body;       ///< sent with Content-Length when non-empty or a PUT/POST
  bool expect_continue = false;          ///< send `Expect: 100-continue`, wait before the body
};

/// Deadlines of one exchange, from the defaults table unless overridden.
struct HttpTimeouts {
  std::chrono::milliseconds connect;
  std::chrono::milliseconds first_byte;
  std::chrono::milliseconds stall;
  std::chrono::milliseconds total{0};  ///< the whole exchange, however steady; 0 = unbounded
  [[nodiscard]] static HttpTimeouts from_defaults();
};

/// What an exchange got done, filled in even when it fails (for retries that resume).
struct ExchangeProgress {
  bool request_sent = false;
  bool first_byte = false;  ///< any response byte arrived
  bool head_complete = false;
  uint64_t body_bytes = 0;    ///< body bytes placed in the destination so far
  uint64_t copied_bytes = 0;  ///< of those, bytes copied in user space (not received in place)
  uint64_t receive_calls = 0;
  Clock::duration time_to_first_byte{};
};

struct HttpResponse {
  ResponseHead head;
  std::string text;       ///< the body when it did not go to the destination (non-2xx, no dest)
  bool reusable = false;  ///< the connection may carry another request
};

/// Vets a response head before any body byte is placed in the destination; an error ends the
/// exchange (and the connection's reuse).
using HeadCheck = std::function<Result<void>(const ResponseHead&)>;

struct ExchangeOptions {
  bool head_only = false;  ///< a HEAD request: headers, never a body
  HeadCheck check;         ///< run on a 2xx head bound for the destination
  uint64_t max_text = uint64_t{16} << 20;
  /// A multi-range GET: a 2xx answer must be a 206 `multipart/byteranges` with a Content-Length,
  /// deframed into these slots (net/byteranges.hpp); any other 2xx answer (200 with the whole
  /// object, a single range) is `Errc::unsupported` before a byte is placed. `dest` stays empty.
  std::span<const RangeFetch> parts;
};

/// Sends @p request on @p conn and reads the response. A 2xx body goes to @p dest (which must be
/// large enough: `Errc::protocol` otherwise); anything else goes to `HttpResponse::text`, at most
/// `max_text` bytes.
[[nodiscard]] Result<HttpResponse> exchange(Connection& conn, const HttpRequest& request,
                                            std::span<std::byte> dest, const HttpTimeouts& timeouts,
                                            ExchangeProgress& progress,
                                            const ExchangeOptions& options = {});

/// Where a connection goes: scheme, host and port.
struct EndpointKey {
  std::string host;
  uint16_t port = 0;
  bool tls = false;
  bool public_only = false;  ///< connect to public addresses only (ConnectOptions::public_only)
  friend auto operator<=>(const EndpointKey&, const EndpointKey&) = default;
};

/// Keep-alive connections per endpoint. At most `cap` connections to one endpoint are open at
/// once (idle plus in use); `acquire` waits for one to be released beyond that (a fiber
/// suspends, a plain thread blocks).
class ConnectionPool {
 public:
  /// @param tls context for https endpoints (may be null when only http is used).
  ConnectionPool(std::shared_ptr<TlsContext> tls, uint32_t cap_per_endpoint);
  ~ConnectionPool();
  ConnectionPool(const ConnectionPool&) = delete;
  ConnectionPool& operator=(const ConnectionPool&) = delete;

  /// A connection and whether it was reused (a reused one may have been closed by the server
  /// while idle; callers retry such a failure once on a fresh connection).
  struct Lease {
    std::unique_ptr<Connection> conn;
    bool reused = false;
  };

  /// An idle connection to @p key, or a new one opened by the calling thread.
  [[nodiscard]] Result<Lease> acquire(const EndpointKey& key, Deadline deadline);
  /// Returns a connection; it is kept for reuse when @p reusable, closed otherwise.
  void release(const EndpointKey& key, std::unique_ptr<Connection> conn, bool reusable);

  [[nodiscard]] uint64_t connections_opened() const;

 private:
  struct Slot {
    std::vector<std::unique_ptr<Connection>> idle;
    uint32_t open = 0;
    std::vector<Waiter*> waiters;  // acquires waiting for a connection to this endpoint
  };
  void wake_all(Slot& slot);
  std::shared_ptr<TlsContext> tls_;
  uint32_t cap_;
  mutable std::mutex mu_;
  std::map<EndpointKey, Slot> slots_;
  uint64_t opened_ = 0;
};

}  // namespace oc::net
