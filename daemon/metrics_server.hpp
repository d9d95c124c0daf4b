// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief onecopyd's metrics port: `GET /metrics` on a loopback TCP port, served by the event
/// loop (daemon_metrics_port, daemon/PROTOCOL.md).
///
/// Bounded whatever connects: at most `daemon_metrics_max_connections` connections at once
/// (more are accepted and closed at once), each closed unanswered if it has not sent its whole
/// request within `daemon_metrics_timeout_ms`, none reading more than
/// `daemon_metrics_max_request_bytes`. One request per connection; the answer is sent without
/// blocking into the empty socket buffer.
#pragma once

#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <string>
#include <vector>

#include "config/defaults.hpp"
#include "config/error.hpp"
#include "config/fd.hpp"
#include "daemon/epoll.hpp"
#include "daemon/metrics_http.hpp"

namespace oc::daemon {

class MetricsServer {
 public:
  /// Listens on `daemon_metrics_address`:`daemon_metrics_port`, registered with @p epoll;
  /// @p metrics renders the body of a `GET /metrics`.
  [[nodiscard]] static Result<std::unique_ptr<MetricsServer>> start(
      const Defaults& cfg, Epoll& epoll, std::function<std::string()> metrics);
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  /// Descriptors its connections hold (each a socket and a timer).
  [[nodiscard]] uint64_t descriptors() const noexcept { return 2 * live_; }
  /// Frees the connections closed since the last call.
  void reap() { closed_.clear(); }

 private:
  struct Conn {
    explicit Conn(uint64_t max_bytes) : reader(max_bytes) {}
    UniqueFd sock, timer;
    HttpRequestReader reader;
    Watch on_sock, on_timer;
    bool closed = false;
  };
  MetricsServer(const Defaults& cfg, Epoll& epoll, std::function<std::string()> metrics);
  void accept();
  void on_readable(Conn& c);
  void close(Conn& c);

  Defaults cfg_;
  Epoll& epoll_;
  std::function<std::string()> metrics_;
  UniqueFd listen_;
  Watch on_listen_;
  std::list<std::unique_ptr<Conn>> conns_;
  std::vector<std::unique_ptr<Conn>> closed_;
  uint64_t live_ = 0;
  std::vector<char> buf_;
};

}  // namespace oc::daemon
