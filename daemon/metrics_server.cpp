// SPDX-License-Identifier: Apache-2.0
#include "daemon/metrics_server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/timerfd.h>

#include "config/log.hpp"

namespace oc::daemon {

MetricsServer::MetricsServer(const Defaults& cfg, Epoll& epoll,
                             std::function<std::string()> metrics)
    : cfg_(cfg),
      epoll_(epoll),
      metrics_(std::move(metrics)),
      buf_(cfg.daemon_metrics_max_request_bytes + 1) {}

MetricsServer::~MetricsServer() = default;

// The address knob admits loopback addresses only (config/defaults.cpp): anyone who can
// connect may read the metrics.
Result<std::unique_ptr<MetricsServer>> MetricsServer::start(const Defaults& cfg, Epoll& epoll,
                                                            std::function<std::string()> metrics) {
  std::unique_ptr<MetricsServer> m(new MetricsServer(cfg, epoll, std::move(metrics)));
  m->listen_.reset(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!m->listen_.valid())
    return Error(Errc::io, "socket() for metrics", __FILE__, __LINE__, errno);
  const int one = 1;
  ::setsockopt(m->listen_.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(cfg.daemon_metrics_port));
  ::inet_pton(AF_INET, cfg.daemon_metrics_address.c_str(), &addr.sin_addr);
  const std::string where =
      fmt::format("{}:{}", cfg.daemon_metrics_address, cfg.daemon_metrics_port);
  if (::bind(m->listen_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::listen(m->listen_.get(), SOMAXCONN) != 0) {
    return Error(Errc::io, fmt::format("metrics port {}", where), __FILE__, __LINE__, errno);
  }
  MetricsServer* raw = m.get();
  m->on_listen_.on_event = [raw](uint32_t) { raw->accept(); };
  OC_TRY(epoll.watch(m->listen_.get(), EPOLLIN, &m->on_listen_));
  log::get().info("metrics on http://{}/metrics", where);
  return m;
}

void MetricsServer::accept() {
  // A bounded number per wakeup, like client connections: a connect flood cannot hold the loop.
  for (uint32_t i = 0; i < cfg_.daemon_messages_per_wakeup; ++i) {
    UniqueFd fd(::accept4(listen_.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
    if (!fd.valid()) return;  // EAGAIN, or EMFILE: the next wakeup tries again
    if (live_ >= cfg_.daemon_metrics_max_connections) continue;  // over the cap: closed at once
    auto c = std::make_unique<Conn>(cfg_.daemon_metrics_max_request_bytes);
    c->sock = std::move(fd);
    // A one-shot timer closes a connection that has not sent its whole request in time, so a
    // slow or silent client cannot hold it.
    c->timer.reset(::timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK));
    if (!c->timer.valid()) continue;
    itimerspec its{};
    its.it_value.tv_sec = static_cast<time_t>(cfg_.daemon_metrics_timeout_ms / 1000);
    its.it_value.tv_nsec = static_cast<long>(cfg_.daemon_metrics_timeout_ms % 1000) * 1'000'000;
    ::timerfd_settime(c->timer.get(), 0, &its, nullptr);
    Conn* raw = c.get();
    c->on_sock.on_event = [this, raw](uint32_t) { on_readable(*raw); };
    c->on_timer.on_event = [this, raw](uint32_t) { close(*raw); };  // too slow
    if (!epoll_.watch(c->sock.get(), EPOLLIN, &c->on_sock).ok() ||
        !epoll_.watch(c->timer.get(), EPOLLIN, &c->on_timer).ok()) {
      continue;
    }
    ++live_;
    conns_.push_back(std::move(c));
  }
}

void MetricsServer::on_readable(Conn& c) {
  if (c.closed) return;
  while (true) {
    const ssize_t n = ::recv(c.sock.get(), buf_.data(), buf_.size(), MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
    if (n <= 0) break;  // gone before its request was complete: no answer
    const HttpOutcome o = c.reader.feed({buf_.data(), static_cast<size_t>(n)});
    if (o == HttpOutcome::incomplete) continue;
    // One small response into an empty socket buffer; a short send is not retried.
    const std::string reply = http_response(o, o == HttpOutcome::metrics ? metrics_() : "");
    (void)::send(c.sock.get(), reply.data(), reply.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    break;
  }
  close(c);
}

void MetricsServer::close(Conn& c) {
  if (c.closed) return;
  c.closed = true;
  --live_;
  // FIN right after the response. Bytes of an oversized request left unread make close() send
  // an RST, which may cut its 400 short; such a client was misbehaving anyway.
  ::shutdown(c.sock.get(), SHUT_WR);
  c.sock.reset();
  c.timer.reset();
  for (auto it = conns_.begin(); it != conns_.end(); ++it) {
    if (it->get() == &c) {
      closed_.push_back(std::move(*it));  // its watches may still be in this wakeup's events
      conns_.erase(it);
      break;
    }
  }
}

}  // namespace oc::daemon
