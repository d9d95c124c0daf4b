// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief onecopyd's event loop: one epoll thread that accepts clients, reads their packets
/// into the `Server`, sends what the sessions' outboxes hold, and runs worker completions,
/// signals, the systemd watchdog and the metrics port.
///
/// Each wakeup costs in proportion to what is ready: every registered descriptor dispatches
/// through its `Watch` (daemon/epoll.hpp), at most `daemon_messages_per_wakeup` packets are
/// read from one client per turn (epoll is level-triggered: the rest wait for the next turn,
/// after the other clients), and only the sessions something happened to are served. At the
/// descriptor limit (EMFILE, or the budget of RLIMIT_NOFILE less `daemon_fd_reserve`) the loop
/// stops accepting for `daemon_accept_pause_ms` rather than spinning, as nginx does.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "config/defaults.hpp"
#include "config/error.hpp"
#include "config/fd.hpp"
#include "daemon/epoll.hpp"
#include "daemon/metrics_server.hpp"
#include "daemon/server.hpp"
#include "daemon/socket_claim.hpp"
#include "daemon/workers.hpp"

namespace oc::daemon {

class EventLoop {
 public:
  /// @param config_path the config file a SIGHUP re-reads (missing is fine when
  ///        @p config_optional).
  EventLoop(Defaults cfg, std::string config_path, bool config_optional);
  ~EventLoop();
  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;

  /// Raises the descriptor limit, binds (or takes from systemd) the socket, blocks the signals
  /// it handles, and starts the worker pools and the metrics port.
  [[nodiscard]] Result<void> setup();
  /// Serves until SIGTERM or SIGINT. @return the exit code.
  int run();

 private:
  Result<void> listen_socket();
  void accept_clients();
  void pause_accepting(std::string_view why);
  void resume_accepting();
  void on_session(Session& s, uint32_t events);
  void flush(Session& s);
  void update_interest(Session& s);
  void on_signal();
  void reload();
  void set_descriptor_budget();

  Defaults cfg_;
  std::string config_path_;
  bool config_optional_;
  Epoll epoll_;
  ClaimedSocket listen_;  // released (its file unlinked) when the loop goes
  UniqueFd signal_, watchdog_, accept_timer_;
  Watch on_listen_, on_signal_, on_watchdog_, on_accept_timer_, on_io_, on_decode_;
  bool accepting_ = true, stopping_ = false;
  uint64_t pauses_ = 0;
  std::vector<uint8_t> rbuf_;
  // Declared first, destroyed last: the pools below join their threads before it goes.
  std::unique_ptr<Server> server_;
  std::unique_ptr<Workers> io_, decode_;
  std::unique_ptr<MetricsServer> metrics_;
};

}  // namespace oc::daemon
