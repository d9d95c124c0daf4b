// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief The metrics port's HTTP side: one request read per connection, then one response.
///
/// onecopyd answers `GET /metrics` on a loopback TCP port (`daemon_metrics_port`) with the
/// Prometheus text of `onecopy metrics`. The epoll loop owns the sockets; this unit only
/// parses the request (llhttp, RFC 9112) and writes the response, so it can be tested alone.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace oc::daemon {

/// What a request asks for, once it is complete, or why it is refused.
enum class HttpOutcome : uint8_t {
  incomplete,          ///< the request head has not all arrived yet
  metrics,             ///< GET /metrics (a query string is ignored): 200
  not_found,           ///< GET of any other path: 404
  method_not_allowed,  ///< anything but GET: 405
  bad_request,         ///< malformed, or larger than the limit: 400
};

/// Reads one HTTP/1.x request from the bytes a connection sends.
class HttpRequestReader {
 public:
  /// @param max_bytes the most bytes a request may take (`daemon_metrics_max_request_bytes`);
  ///        more is `bad_request`.
  explicit HttpRequestReader(uint64_t max_bytes);
  ~HttpRequestReader();
  HttpRequestReader(const HttpRequestReader&) = delete;
  HttpRequestReader& operator=(const HttpRequestReader&) = delete;

  /// Parses the next @p bytes. @return `incomplete` until the request is complete or wrong;
  /// after that, the same outcome for every call.
  HttpOutcome feed(std::span<const char> bytes);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

/// @return the whole response for @p outcome (not `incomplete`), `Connection: close`, with
///         @p metrics as the body of a `metrics` outcome.
[[nodiscard]] std::string http_response(HttpOutcome outcome, std::string_view metrics);

}  // namespace oc::daemon
