// SPDX-License-Identifier: Apache-2.0
#include "daemon/event_loop.hpp"

#include <signal.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>

#include <algorithm>
#include <cstring>
#include <thread>

#include "config/log.hpp"
#include "daemon/config.hpp"
#include "daemon/socket_io.hpp"
#include "daemon/systemd.hpp"
#include "daemon/wire.hpp"
#include "kernels/device.hpp"

namespace oc::daemon {
namespace {

// Jobs of the daemon itself (the GPU probe) queue under an owner no client has.
constexpr uint64_t kDaemonOwner = UINT64_MAX;

void arm(int timer, uint64_t us, bool periodic) {
  itimerspec its{};
  its.it_value.tv_sec = static_cast<time_t>(us / 1'000'000);
  its.it_value.tv_nsec = static_cast<long>(us % 1'000'000) * 1000;
  if (periodic) its.it_interval = its.it_value;
  ::timerfd_settime(timer, 0, &its, nullptr);
}

// Tells a refused client why, if its socket takes one small packet now; it is closed after.
// What it sent already is read first, so that the close is not a reset that hides the Error.
void tell(int sock, const Error& e) {
  uint8_t sink[256];
  for (int i = 0; i < 4 && ::recv(sock, sink, sizeof sink, MSG_DONTWAIT) > 0; ++i) {
  }
  flatbuffers::FlatBufferBuilder fbb;
  auto err = fbs::CreateErrorDirect(fbb, 0, std::string(errc_name(e.code())).c_str(),
                                    e.describe().c_str());
  fbb.Finish(fbs::CreateMessage(fbb, fbs::Body::Error, err.Union()));
  const auto frame = make_frame(fbb);
  (void)::send(sock, frame.data(), frame.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
}

}  // namespace

EventLoop::EventLoop(Defaults cfg, std::string config_path, bool config_optional)
    : cfg_(std::move(cfg)),
      config_path_(std::move(config_path)),
      config_optional_(config_optional) {}

EventLoop::~EventLoop() = default;

// The soft limit goes up to the hard one (systemd's LimitNOFILE sets both), and clients get it
// less daemon_fd_reserve: rings, S3 connections, timers and logs keep the rest.
void EventLoop::set_descriptor_budget() {
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rlimit raised = rl;
    raised.rlim_cur = rl.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) rl = raised;
  }
  const uint64_t limit = rl.rlim_cur == RLIM_INFINITY ? uint64_t{1} << 20 : rl.rlim_cur;
  const uint64_t budget =
      limit > cfg_.daemon_fd_reserve ? limit - cfg_.daemon_fd_reserve : limit / 2;
  server_->set_descriptor_budget(budget);
  log::get().info("descriptors: limit {}, {} for clients (daemon_fd_reserve {})", limit, budget,
                  cfg_.daemon_fd_reserve);
}

Result<void> EventLoop::listen_socket() {
  if (int fd = socket_from_systemd(); fd >= 0) {
    listen_ = ClaimedSocket::adopt(fd);
    log::get().info("listening on the socket systemd passed (fd 3)");
    return {};
  }
  OC_ASSIGN_OR_RETURN(listen_, ClaimedSocket::bind_path(cfg_.daemon_socket));
  log::get().info("listening on {}", cfg_.daemon_socket);
  return {};
}

Result<void> EventLoop::setup() {
  OC_EXPECT(epoll_.valid(), io, "epoll_create1 failed");
  rbuf_.resize(cfg_.daemon_max_message_bytes + 1);
  // Signals are blocked before any thread starts, so that every thread inherits the mask and
  // only the signalfd sees them.
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGTERM);
  sigaddset(&mask, SIGINT);
  sigaddset(&mask, SIGHUP);
  ::sigprocmask(SIG_BLOCK, &mask, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
  signal_.reset(::signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK));

  OC_ASSIGN_OR_RETURN(AccessPolicy policy, AccessPolicy::create(cfg_));
  const uint32_t decode_threads = cfg_.daemon_worker_threads
                                      ? cfg_.daemon_worker_threads
                                      : std::max(1u, std::thread::hardware_concurrency());
  // Opens and plans may wait on the network for as long as the HTTP timeouts allow: one
  // connection runs on at most half of those threads and one user on all but one, so another
  // connection, and another user, always find one free.
  const uint32_t io = cfg_.daemon_io_threads;
  io_ = std::make_unique<Workers>(io, std::max(1u, io / 2), std::max(1u, io - 1));
  decode_ = std::make_unique<Workers>(decode_threads, 0, 0);
  server_ = std::make_unique<Server>(cfg_, std::move(policy), *io_, *decode_);
  set_descriptor_budget();

  OC_TRY(listen_socket());
  on_listen_.on_event = [this](uint32_t) { accept_clients(); };
  OC_TRY(epoll_.watch(listen_.fd(), EPOLLIN, &on_listen_));
  on_signal_.on_event = [this](uint32_t) { on_signal(); };
  OC_TRY(epoll_.watch(signal_.get(), EPOLLIN, &on_signal_));
  on_io_.on_event = [this](uint32_t) { io_->drain(); };
  OC_TRY(epoll_.watch(io_->event_fd(), EPOLLIN, &on_io_));
  on_decode_.on_event = [this](uint32_t) { decode_->drain(); };
  OC_TRY(epoll_.watch(decode_->event_fd(), EPOLLIN, &on_decode_));
  accept_timer_.reset(::timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK));
  on_accept_timer_.on_event = [this](uint32_t) { resume_accepting(); };
  OC_TRY(epoll_.watch(accept_timer_.get(), EPOLLIN, &on_accept_timer_));

  if (const uint64_t us = watchdog_interval_us(cfg_.daemon_watchdog_ms); us > 0) {
    watchdog_.reset(::timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK));
    arm(watchdog_.get(), us, /*periodic=*/true);
    on_watchdog_.on_event = [this](uint32_t) {
      uint64_t ticks;
      (void)::read(watchdog_.get(), &ticks, sizeof(ticks));
      sd_notify(fmt::format("WATCHDOG=1\nSTATUS={} clients", server_->session_count()));
    };
    OC_TRY(epoll_.watch(watchdog_.get(), EPOLLIN, &on_watchdog_));
  }
  if (cfg_.daemon_metrics_port != 0) {
    OC_ASSIGN_OR_RETURN(metrics_, MetricsServer::start(cfg_, epoll_, [this] {
                          return status_prometheus(server_->status());
                        }));
  }
  // Probing creates a CUDA context per device (slow, once): on a worker, never on the loop.
  io_->submit(kDaemonOwner, kDaemonOwner,
              [this] {
                const kernels::DeviceInfo gpu = kernels::probe_devices();
                return Workers::Completion([this, gpu] { server_->set_gpu(gpu); });
              },
              {});
  return {};
}

void EventLoop::pause_accepting(std::string_view why) {
  if (!accepting_) return;
  accepting_ = false;
  epoll_.forget(listen_.fd());
  arm(accept_timer_.get(), uint64_t{cfg_.daemon_accept_pause_ms} * 1000, /*periodic=*/false);
  // The first pause is news; a client keeping the daemon at its limit would flood the log.
  log::get().log(pauses_++ == 0 ? spdlog::level::warn : spdlog::level::debug,
                 "not accepting connections for {} ms: {}", cfg_.daemon_accept_pause_ms, why);
}

void EventLoop::resume_accepting() {
  uint64_t ticks;
  (void)::read(accept_timer_.get(), &ticks, sizeof(ticks));
  if (accepting_) return;
  if (server_->out_of_descriptors(1)) {
    arm(accept_timer_.get(), uint64_t{cfg_.daemon_accept_pause_ms} * 1000, false);
    return;
  }
  accepting_ = epoll_.watch(listen_.fd(), EPOLLIN, &on_listen_).ok();
}

void EventLoop::accept_clients() {
  for (uint32_t i = 0; i < cfg_.daemon_messages_per_wakeup && accepting_; ++i) {
    UniqueFd sock(::accept4(listen_.fd(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
    if (!sock.valid()) {
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        server_->note_refused_connection();
        pause_accepting(fmt::format("accept: {}", std::strerror(errno)));
      }
      if (errno == EINTR || errno == ECONNABORTED) continue;
      return;  // EAGAIN: none left
    }
    auto peer = peer_of(sock.get());
    if (!peer.ok()) continue;
    auto s = server_->admit(sock, *peer);
    if (!s.ok()) {
      log::get().warn("refused a client: pid {} uid {} gid {}: {}", peer->pid, peer->uid, peer->gid,
                      s.error().describe());
      tell(sock.get(), s.error());
      if (server_->out_of_descriptors(1)) pause_accepting("at the descriptor budget");
      continue;
    }
    Session* session = *s;
    session->watch.on_event = [this, session](uint32_t ev) { on_session(*session, ev); };
    session->epoll_events = EPOLLIN | EPOLLRDHUP;
    if (auto r = epoll_.watch(session->fd.get(), session->epoll_events, &session->watch); !r.ok()) {
      server_->close(*session, r.error().describe());
    }
  }
}

void EventLoop::on_session(Session& s, uint32_t events) {
  if (s.closed) return;
  try {
    if (events & EPOLLOUT) flush(s);
    const bool paused = s.out.bytes() > cfg_.daemon_client_max_queued_bytes;
    if (paused && (events & (EPOLLHUP | EPOLLERR))) {
      server_->close(s, "");  // gone while it left replies unread
      return;
    }
    if (!(events & (EPOLLIN | EPOLLHUP | EPOLLERR | EPOLLRDHUP))) return;
    // A turn's budget of packets, and none while its replies pile up unread: a client that
    // floods the daemon waits behind the others, and one that does not read stops being read.
    for (uint32_t i = 0; i < cfg_.daemon_messages_per_wakeup && !s.closed &&
                         s.out.bytes() <= cfg_.daemon_client_max_queued_bytes;
         ++i) {
      auto p = receive_packet(s.fd.get(), rbuf_);
      if (!p.ok()) {
        server_->close(s, p.error().describe());
        return;
      }
      if (!*p) break;
      if ((*p)->eof) {
        server_->close(s, "");
        return;
      }
      server_->on_packet(s, {rbuf_.data(), (*p)->bytes}, **p);
    }
    if (!s.closed) update_interest(s);
  } catch (...) {
    server_->close(s, current_exception_error("client I/O").describe());
  }
}

void EventLoop::flush(Session& s) {
  if (s.closed) return;
  auto r = s.out.flush(s.fd.get());
  if (!r.ok() || !*r) {
    server_->close(s, r.ok() ? "" : r.error().describe());  // "": it hung up
    return;
  }
  update_interest(s);
}

void EventLoop::update_interest(Session& s) {
  uint32_t want = EPOLLRDHUP;
  if (s.out.bytes() <= cfg_.daemon_client_max_queued_bytes) want |= EPOLLIN;
  if (!s.out.empty()) want |= EPOLLOUT;
  if (want == s.epoll_events) return;
  if (auto r = epoll_.watch(s.fd.get(), want, &s.watch, /*modify=*/true); !r.ok()) {
    server_->close(s, r.error().describe());
    return;
  }
  s.epoll_events = want;
}

void EventLoop::reload() {
  auto fresh = load_config(config_path_, config_optional_);
  if (!fresh.ok()) {
    log::get().error("SIGHUP: config not reloaded: {}", fresh.error().to_string());
    return;
  }
  auto policy = AccessPolicy::create(*fresh);
  if (!policy.ok()) {
    log::get().error("SIGHUP: config not reloaded: {}", policy.error().to_string());
    return;
  }
  server_->reconfigure(*fresh, std::move(*policy));
  cfg_.log_level = fresh->log_level;
  cfg_.daemon_client_max_queued_bytes = fresh->daemon_client_max_queued_bytes;
  cfg_.daemon_messages_per_wakeup = fresh->daemon_messages_per_wakeup;
  (void)log::init(cfg_.log_level);
  log::get().info(
      "SIGHUP: config reloaded from {}: log_level={}; client limits and the access policy "
      "apply now, sockets, sizes, threads and the format/ and net/ knobs at the next start",
      config_path_, cfg_.log_level);
}

void EventLoop::on_signal() {
  signalfd_siginfo si{};
  while (::read(signal_.get(), &si, sizeof(si)) == sizeof(si)) {
    if (si.ssi_signo == SIGHUP) {
      sd_notify("RELOADING=1");
      reload();
      sd_notify("READY=1");
    } else {
      log::get().info("signal {}: stopping", si.ssi_signo);
      sd_notify("STOPPING=1");
      stopping_ = true;
    }
  }
}

int EventLoop::run() {
  sd_notify("READY=1\nSTATUS=serving on " + cfg_.daemon_socket);
  std::vector<epoll_event> events(256);
  while (!stopping_) {
    int timeout = -1;
    if (auto deadline = server_->next_deadline()) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(*deadline - Clock::now());
      timeout = static_cast<int>(std::clamp<int64_t>(left.count(), 0, 60'000));
    }
    const int n =
        ::epoll_wait(epoll_.fd(), events.data(), static_cast<int>(events.size()), timeout);
    for (int i = 0; i < n; ++i) {
      auto* watch = static_cast<Watch*>(events[static_cast<size_t>(i)].data.ptr);
      try {
        watch->on_event(events[static_cast<size_t>(i)].events);
      } catch (...) {
        log::get().error("{}", current_exception_error("event loop").describe());
      }
    }
    try {
      server_->expire(Clock::now());
      server_->service();
      for (Session* s : server_->take_touched()) flush(*s);
    } catch (...) {
      log::get().error("{}", current_exception_error("event loop").describe());
    }
    server_->set_extra_descriptors(metrics_ ? metrics_->descriptors() : 0);
    server_->reap();
    if (metrics_) metrics_->reap();
  }
  server_->close_all();
  server_->reap();
  return 0;
}

}  // namespace oc::daemon
