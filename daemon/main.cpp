// SPDX-License-Identifier: Apache-2.0
// onecopyd: serves Vortex scans to local clients over a SOCK_SEQPACKET Unix socket
// (daemon/PROTOCOL.md). One epoll thread accepts, reads requests and sends replies; opening files
// and decoding batches into slabs run on a worker pool (daemon/workers.hpp), so a slow open or
// decode never holds up another client's requests. With daemon_metrics_port set, the same loop
// answers GET /metrics on a loopback TCP port.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "client/open_uri.hpp"
#include "config/defaults.hpp"
#include "config/log.hpp"
#include "daemon/client.hpp"
#include "daemon/config.hpp"
#include "daemon/metrics_http.hpp"
#include "daemon/rate.hpp"
#include "daemon/scan_request.hpp"
#include "daemon/slab.hpp"
#include "daemon/wire.hpp"
#include "daemon/workers.hpp"
#include "format/arrow_export.hpp"
#include "format/reader.hpp"
#include "format/shard.hpp"
#include "net/s3_source.hpp"
#include "kernels/device.hpp"
#include "onecopy_build_config.h"

namespace oc::daemon {
namespace {

using Clock = std::chrono::steady_clock;

// Names per Listed reply: well under the default Unix socket send buffer (about 208 KiB), which
// bounds one SOCK_SEQPACKET packet.
constexpr size_t kListPartBytes = 64 << 10;

// ---- sd_notify, by hand: one datagram to $NOTIFY_SOCKET ----------------------------------------
void sd_notify(const std::string& state) {
  const char* path = std::getenv("NOTIFY_SOCKET");
  if (!path || !*path) return;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const size_t len = std::strlen(path);
  if (len >= sizeof(addr.sun_path)) return;
  std::memcpy(addr.sun_path, path, len);
  if (addr.sun_path[0] == '@') addr.sun_path[0] = '\0';  // abstract namespace
  int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return;
  (void)::sendto(fd, state.data(), state.size(), MSG_NOSIGNAL, reinterpret_cast<sockaddr*>(&addr),
                 static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + len));
  ::close(fd);
}

bool id_allowed(const std::string& list, uint32_t id) {
  if (list == "*") return true;
  size_t start = 0;
  while (start < list.size()) {
    size_t end = list.find(',', start);
    if (end == std::string::npos) end = list.size();
    if (std::strtoul(list.substr(start, end - start).c_str(), nullptr, 10) == id) return true;
    start = end + 1;
  }
  return false;
}

// A batch copied into its range of one of the client's slabs (no slab: a batch of no bytes).
struct Placed {
  std::shared_ptr<Slab> slab;
  uint64_t offset = 0;
  BatchLayout layout;
  uint64_t copied = 0;
  format::UnitPosition position;  // a sharded scan's, just after this batch
};

// What a scan has ready to send, in order: a placed batch, or the scan's end (neither), or its
// error.
struct Produced {
  std::optional<Placed> batch;
  std::optional<Error> error;
};

struct ActiveScan {
  uint64_t id = 0;
  std::shared_ptr<format::VortexFile> file;
  // Only the one decode job in flight touches the scan; the loop never does.
  std::unique_ptr<format::Scan> scan;
  std::deque<Produced> ready;  // decoded ahead, in scan order
  uint64_t ready_bytes = 0;
  std::optional<BatchLayout> unplaced;  // decoded, waiting for room in a slab
  format::UnitPosition unplaced_position;
  bool busy = false;      // a decode or copy job is running
  bool finished = false;  // its end or error is in `ready`
  bool dropped = false;   // cancelled: a copy job that finishes gives its range back
  uint64_t rows = 0, batches = 0, bytes = 0;
};
// Shared with a running decode job, so that Cancel or a disconnect may drop it at any time.
using ScanPtr = std::shared_ptr<ActiveScan>;

// One node of a scan's Arrow schema, kept while the ScanBegin waits for the loop thread.
struct SchemaNodeCopy {
  std::string format, name;
  int64_t flags = 0;
  uint32_t n_children = 0;
};

struct Client {
  int fd = -1;
  uint64_t serial = 0;  // tells a completion whether its client is still this fd's
  ucred cred{};
  std::map<uint64_t, std::shared_ptr<format::VortexFile>> files;
  std::multiset<uint64_t> opening;  // request ids of the Opens running on a worker
  std::deque<ScanPtr> scans;  // served in order, the front one only
  uint32_t planning = 0;       // Scans being planned on a worker (they count as active)
  // This connection's slabs, by id; only ever this client's batches are placed in them.
  std::map<uint64_t, std::shared_ptr<Slab>> slabs;
  struct Lease {
    std::shared_ptr<Slab> slab;  // null for a batch of no bytes
    uint64_t offset = 0, bytes = 0;
  };
  std::map<uint64_t, Lease> leases;
  uint64_t bytes_in_flight = 0;
  bool said_hello = false;
  // The latest List expansion, served in parts as the client asks for them.
  std::string listed_pattern;
  std::vector<std::string> listed;
};

class Server {
 public:
  Server(Defaults cfg, std::string config_path, bool config_optional)
      : cfg_(std::move(cfg)), config_path_(std::move(config_path)),
        config_optional_(config_optional), started_(Clock::now()) {}

  Result<void> setup();
  int run();

 private:
  Result<void> listen_socket();
  Result<void> metrics_socket();
  void accept_clients();
  void accept_http();
  void on_http(int fd);
  void close_http(int fd);
  void on_readable(Client& c);
  Result<void> handle(Client& c, const fbs::Message& m, std::span<const uint8_t> frame);
  void plan_async(Client& c, std::span<const uint8_t> frame, uint64_t request,
                  std::shared_ptr<format::VortexFile> file);
  Result<void> send(Client& c, flatbuffers::FlatBufferBuilder& fbb, int fd = -1);
  void send_error(Client& c, uint64_t request, const Error& e);
  void disconnect(int fd, const std::string& why);
  Client* find(int fd, uint64_t serial);
  void open_async(Client& c, uint64_t request, std::string uri, uint64_t unit_rows);
  void list_async(Client& c, uint64_t request, std::string pattern);
  Result<void> send_listed(Client& c, uint64_t request, uint64_t offset);
  void decode_ahead(Client& c, const ScanPtr& s);
  void on_decoded(int fd, uint64_t serial, const ScanPtr& s, Produced p,
                  std::optional<BatchLayout> layout, const format::UnitPosition& position);
  void place(Client& c, const ScanPtr& s);
  void on_copied(int fd, uint64_t serial, const ScanPtr& s, Placed p);
  void give_back(Client& c, const std::shared_ptr<Slab>& slab, uint64_t offset);
  void drop_scan(Client& c, const ScanPtr& s);
  bool service(Client& c);  // sends what is ready, schedules decodes; false: client gone
  Result<void> send_batch(Client& c, ActiveScan& s, const Placed& b);
  void reload();
  uint64_t pool_bytes() const;  // every client's slabs
  Status status() const;

  Defaults cfg_;
  std::string config_path_;
  bool config_optional_;
  Clock::time_point started_;
  int epoll_ = -1, listen_ = -1, signal_ = -1, watchdog_ = -1;
  std::map<int, std::unique_ptr<Client>> clients_;
  // Metrics port connections: each reads one request, before its timer fires, then closes.
  struct HttpConn {
    std::unique_ptr<HttpRequestReader> reader;
    int timer = -1;
  };
  int metrics_ = -1;
  std::map<int, HttpConn> http_;    // by socket
  std::map<int, int> http_timers_;  // timerfd -> socket
  uint64_t next_id_ = 1, next_serial_ = 1;
  uint64_t bytes_delivered_ = 0, batches_delivered_ = 0, bytes_copied_ = 0, errors_ = 0;
  uint64_t slabs_sent_ = 0;
  std::atomic<uint64_t> fetched_{0};  // segment bytes the workers' scans read, local or S3
  bool logged_pages_ = false;
  RateWindow<10> delivered_rate_;
  std::vector<uint8_t> rbuf_;
  // Last: destroyed first, so its threads are joined while everything above still exists.
  // Started in setup(), after the signals are blocked, so that the threads inherit the mask.
  std::unique_ptr<Workers> workers_;
};

uint64_t Server::pool_bytes() const {
  uint64_t total = 0;
  for (const auto& [fd, c] : clients_) {
    for (const auto& [id, slab] : c->slabs) total += slab->bytes();
  }
  return total;
}

// One snapshot for StatusReply and the metrics port.
Status Server::status() const {
  Status st;
  for (const auto& [fd, cl] : clients_) {
    st.active_scans += static_cast<uint32_t>(cl->scans.size());
    st.batches_in_flight += cl->leases.size();
  }
  const auto up = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started_);
  st.version = OC_VERSION;
  st.uptime_ms = static_cast<uint64_t>(up.count());
  st.clients = static_cast<uint32_t>(clients_.size());
  st.bytes_delivered = bytes_delivered_;
  st.errors = errors_;
  st.pool_bytes = pool_bytes();
  st.pool_limit_bytes = cfg_.daemon_pool_bytes;
  st.batches_delivered = batches_delivered_;
  st.gbps_10s =
      delivered_rate_.per_second(up.count() / 1000, static_cast<double>(up.count()) / 1e3) / 1e9;
  st.requests_in_flight = workers_->pending();
  st.bytes_copied = bytes_copied_;
  st.copies_per_byte = bytes_delivered_ ? static_cast<double>(bytes_copied_) /
                                              static_cast<double>(bytes_delivered_)
                                        : 0.0;
  st.worker_threads = static_cast<uint32_t>(workers_->size());
  st.slabs_sent = slabs_sent_;
  st.bytes_fetched = fetched_.load();
  if (auto s3 = net::environment_client_if_made()) {
    st.s3_requests = s3->counters().requests.load();
    st.s3_retries = s3->counters().retries.load();
    st.s3_failures = s3->counters().failures.load();
  }
  const kernels::DeviceInfo gpu = kernels::probe_devices();
  st.gpu_devices = static_cast<uint32_t>(gpu.count);
  st.gpu_memory_used_bytes = gpu.memory_used_bytes;
  st.gpu_memory_total_bytes = gpu.memory_total_bytes;
  return st;
}

Client* Server::find(int fd, uint64_t serial) {
  auto it = clients_.find(fd);
  return it != clients_.end() && it->second->serial == serial ? it->second.get() : nullptr;
}

Result<void> Server::listen_socket() {
  // Socket activation: systemd passes the listening socket as fd 3.
  const char* pid = std::getenv("LISTEN_PID");
  const char* fds = std::getenv("LISTEN_FDS");
  if (pid && fds && std::strtol(pid, nullptr, 10) == ::getpid() && std::atoi(fds) >= 1) {
    listen_ = 3;
    ::fcntl(listen_, F_SETFD, FD_CLOEXEC);
    ::fcntl(listen_, F_SETFL, ::fcntl(listen_, F_GETFL) | O_NONBLOCK);
    ::unsetenv("LISTEN_PID");
    ::unsetenv("LISTEN_FDS");
    ::unsetenv("LISTEN_FDNAMES");
    log::get().info("listening on the socket systemd passed (fd 3)");
    return {};
  }
  listen_ = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (listen_ < 0) return Error(Errc::io, "socket()", __FILE__, __LINE__, errno);
  const std::string& path = cfg_.daemon_socket;
  struct stat st{};
  if (::lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) ::unlink(path.c_str());
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  if (::bind(listen_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    return Error(Errc::io, fmt::format("bind {}", path), __FILE__, __LINE__, errno);
  }
  ::chmod(path.c_str(), 0660);
  if (::listen(listen_, 128) != 0) return Error(Errc::io, "listen()", __FILE__, __LINE__, errno);
  log::get().info("listening on {}", path);
  return {};
}

// The address knob admits loopback addresses only (config/defaults.cpp): anyone who can
// connect may read the metrics.
Result<void> Server::metrics_socket() {
  metrics_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (metrics_ < 0) return Error(Errc::io, "socket() for metrics", __FILE__, __LINE__, errno);
  const int one = 1;
  ::setsockopt(metrics_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(cfg_.daemon_metrics_port));
  ::inet_pton(AF_INET, cfg_.daemon_metrics_address.c_str(), &addr.sin_addr);
  const std::string where =
      fmt::format("{}:{}", cfg_.daemon_metrics_address, cfg_.daemon_metrics_port);
  if (::bind(metrics_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::listen(metrics_, SOMAXCONN) != 0) {
    return Error(Errc::io, fmt::format("metrics port {}", where), __FILE__, __LINE__, errno);
  }
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = metrics_;
  ::epoll_ctl(epoll_, EPOLL_CTL_ADD, metrics_, &ev);
  log::get().info("metrics on http://{}/metrics", where);
  return {};
}

Result<void> Server::setup() {
  rbuf_.resize(cfg_.daemon_max_message_bytes + 1);
  epoll_ = ::epoll_create1(EPOLL_CLOEXEC);
  OC_TRY(listen_socket());
  if (cfg_.daemon_metrics_port != 0) OC_TRY(metrics_socket());
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGTERM);
  sigaddset(&mask, SIGINT);
  sigaddset(&mask, SIGHUP);
  ::sigprocmask(SIG_BLOCK, &mask, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
  signal_ = ::signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
  workers_ = std::make_unique<Workers>(cfg_.daemon_worker_threads);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = listen_;
  ::epoll_ctl(epoll_, EPOLL_CTL_ADD, listen_, &ev);
  ev.data.fd = signal_;
  ::epoll_ctl(epoll_, EPOLL_CTL_ADD, signal_, &ev);
  ev.data.fd = workers_->event_fd();
  ::epoll_ctl(epoll_, EPOLL_CTL_ADD, workers_->event_fd(), &ev);

  uint64_t watchdog_us = uint64_t{cfg_.daemon_watchdog_ms} * 1000;
  if (const char* w = std::getenv("WATCHDOG_USEC")) {
    const char* wpid = std::getenv("WATCHDOG_PID");
    if (!wpid || std::strtol(wpid, nullptr, 10) == ::getpid()) {
      watchdog_us = std::strtoull(w, nullptr, 10) / 2;
    }
  }
  if (watchdog_us > 0) {
    watchdog_ = ::timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
    itimerspec its{};
    its.it_interval.tv_sec = static_cast<time_t>(watchdog_us / 1'000'000);
    its.it_interval.tv_nsec = static_cast<long>(watchdog_us % 1'000'000) * 1000;
    its.it_value = its.it_interval;
    ::timerfd_settime(watchdog_, 0, &its, nullptr);
    ev.data.fd = watchdog_;
    ::epoll_ctl(epoll_, EPOLL_CTL_ADD, watchdog_, &ev);
  }
  return {};
}

void Server::accept_clients() {
  while (true) {
    int fd = ::accept4(listen_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) return;
    ucred cred{};
    socklen_t len = sizeof(cred);
    if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 ||
        !(id_allowed(cfg_.daemon_allowed_uids, cred.uid) ||
          id_allowed(cfg_.daemon_allowed_gids, cred.gid))) {
      log::get().warn("refused a client: pid {} uid {} gid {} not allowed", cred.pid, cred.uid,
                      cred.gid);
      ++errors_;
      ::close(fd);
      continue;
    }
    if (clients_.size() >= cfg_.daemon_max_clients) {
      log::get().warn("refused a client (pid {}): {} clients already", cred.pid, clients_.size());
      ++errors_;
      ::close(fd);
      continue;
    }
    auto c = std::make_unique<Client>();
    c->fd = fd;
    c->cred = cred;
    c->serial = next_serial_++;
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.fd = fd;
    ::epoll_ctl(epoll_, EPOLL_CTL_ADD, fd, &ev);
    log::get().debug("client fd {} connected: pid {} uid {}", fd, cred.pid, cred.uid);
    clients_[fd] = std::move(c);
  }
}

void Server::accept_http() {
  while (true) {
    const int fd = ::accept4(metrics_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) return;
    // A one-shot timer closes a connection that has not sent its whole request in time, so a
    // slow or silent client cannot hold it.
    HttpConn h;
    h.reader = std::make_unique<HttpRequestReader>(cfg_.daemon_metrics_max_request_bytes);
    h.timer = ::timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
    if (h.timer < 0) {
      ::close(fd);
      continue;
    }
    itimerspec its{};
    its.it_value.tv_sec = static_cast<time_t>(cfg_.daemon_metrics_timeout_ms / 1000);
    its.it_value.tv_nsec = static_cast<long>(cfg_.daemon_metrics_timeout_ms % 1000) * 1'000'000;
    ::timerfd_settime(h.timer, 0, &its, nullptr);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    ::epoll_ctl(epoll_, EPOLL_CTL_ADD, fd, &ev);
    ev.data.fd = h.timer;
    ::epoll_ctl(epoll_, EPOLL_CTL_ADD, h.timer, &ev);
    http_timers_[h.timer] = fd;
    http_[fd] = std::move(h);
  }
}

void Server::on_http(int fd) {
  HttpConn& h = http_.at(fd);
  while (true) {
    const ssize_t n = ::recv(fd, rbuf_.data(), rbuf_.size(), MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
    if (n <= 0) break;  // gone before its request was complete: no answer
    const HttpOutcome o = h.reader->feed({reinterpret_cast<const char*>(rbuf_.data()),
                                          static_cast<size_t>(n)});
    if (o == HttpOutcome::incomplete) continue;
    // One small response into an empty socket buffer; a short send is not retried.
    const std::string reply =
        http_response(o, o == HttpOutcome::metrics ? status_prometheus(status()) : "");
    (void)::send(fd, reply.data(), reply.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    break;
  }
  close_http(fd);
}

void Server::close_http(int fd) {
  auto it = http_.find(fd);
  if (it == http_.end()) return;
  ::epoll_ctl(epoll_, EPOLL_CTL_DEL, it->second.timer, nullptr);
  ::close(it->second.timer);
  http_timers_.erase(it->second.timer);
  ::epoll_ctl(epoll_, EPOLL_CTL_DEL, fd, nullptr);
  // FIN right after the response. Bytes of an oversized request left unread make close() send
  // an RST, which may cut its 400 short; such a client was misbehaving anyway.
  ::shutdown(fd, SHUT_WR);
  ::close(fd);
  http_.erase(it);
}

void Server::disconnect(int fd, const std::string& why) {
  auto it = clients_.find(fd);
  if (it == clients_.end()) return;
  Client& c = *it->second;
  if (!why.empty()) {
    log::get().error("disconnecting client pid {}: {}", c.cred.pid, why);
    ++errors_;
  }
  // Slabs are memfds the client maps; closing the connection ends every lease at once and
  // drops our mappings, and the kernel frees each slab when the client's mappings go too.
  log::get().debug("client pid {} gone; {} leases ({} bytes) reclaimed", c.cred.pid,
                   c.leases.size(), c.bytes_in_flight);
  ::epoll_ctl(epoll_, EPOLL_CTL_DEL, fd, nullptr);
  ::close(fd);
  clients_.erase(it);
}

Result<void> Server::send(Client& c, flatbuffers::FlatBufferBuilder& fbb, int fd) {
  auto frame = make_frame(fbb);
  iovec iov{frame.data(), frame.size()};
  msghdr mh{};
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  if (fd >= 0) {
    mh.msg_control = control;
    mh.msg_controllen = sizeof(control);
    cmsghdr* cm = CMSG_FIRSTHDR(&mh);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(cm), &fd, sizeof(int));
  }
  // Non-blocking: a client that leaves its replies unread until the socket buffer is full is
  // disconnected rather than stalling every other client.
  ssize_t n = ::sendmsg(c.fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
  if (n != static_cast<ssize_t>(frame.size())) {
    return Error(Errc::io, "send to client failed", __FILE__, __LINE__, errno);
  }
  return {};
}

void Server::send_error(Client& c, uint64_t request, const Error& e) {
  ++errors_;
  flatbuffers::FlatBufferBuilder fbb;
  auto err = fbs::CreateErrorDirect(fbb, request, std::string(errc_name(e.code())).c_str(),
                                    e.to_string().c_str());
  fbb.Finish(fbs::CreateMessage(fbb, fbs::Body::Error, err.Union()));
  (void)send(c, fbb);
}

void Server::on_readable(Client& c) {
  const int fd = c.fd;
  while (clients_.count(fd)) {
    iovec iov{rbuf_.data(), rbuf_.size()};
    msghdr mh{};
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;  // no control buffer: any fds a client sends are closed by the kernel
    ssize_t n = ::recvmsg(fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
    if (n <= 0) {
      disconnect(fd, n < 0 ? fmt::format("recv: {}", std::strerror(errno)) : "");
      return;
    }
    if (mh.msg_flags & MSG_TRUNC) {
      disconnect(fd, fmt::format("message over the {}-byte limit (daemon_max_message_bytes)",
                                 cfg_.daemon_max_message_bytes));
      return;
    }
    auto msg = parse_frame({rbuf_.data(), static_cast<size_t>(n)}, cfg_.daemon_max_message_bytes);
    if (!msg.ok()) {
      send_error(c, 0, msg.error());
      disconnect(fd, msg.error().to_string());
      return;
    }
    // handle() fails only for a protocol violation or a reply that could not be sent; either
    // ends this client. Request-level failures (a missing file) are Error replies instead.
    auto r = handle(c, **msg, {rbuf_.data(), static_cast<size_t>(n)});
    if (!r.ok()) {
      if (r.error().code() == Errc::protocol) send_error(c, 0, r.error());
      disconnect(fd, r.error().to_string());
      return;
    }
  }
}

Result<void> Server::handle(Client& c, const fbs::Message& m, std::span<const uint8_t> frame) {
  flatbuffers::FlatBufferBuilder fbb;
  OC_EXPECT(c.said_hello || m.body_type() == fbs::Body::Hello, protocol,
            "{} before Hello", fbs::EnumNameBody(m.body_type()));
  switch (m.body_type()) {
    case fbs::Body::Hello: {
      const auto* h = m.body_as_Hello();
      OC_EXPECT(h->version() == kProtocolVersion, protocol, "client speaks protocol {}",
                h->version());
      c.said_hello = true;
      std::vector<flatbuffers::Offset<flatbuffers::String>> features{
          fbb.CreateString("scan"), fbb.CreateString("filter"), fbb.CreateString("slab-pool")};
      auto reply = fbs::CreateHelloReplyDirect(
          fbb, kProtocolVersion, &features, "host", "onecopyd " OC_VERSION,
          cfg_.daemon_client_max_batches_in_flight, cfg_.daemon_client_max_bytes_in_flight);
      fbb.Finish(fbs::CreateMessage(fbb, fbs::Body::HelloReply, reply.Union()));
      return send(c, fbb);
    }
    case fbs::Body::StatusRequest: {
      const Status st = status();
      auto reply = fbs::CreateStatusReplyDirect(
          fbb, st.version.c_str(), st.uptime_ms, st.clients, st.active_scans,
          st.batches_in_flight, st.bytes_delivered, st.errors, st.pool_bytes, st.pool_limit_bytes,
          st.batches_delivered, st.gbps_10s, st.requests_in_flight, st.bytes_copied,
          st.copies_per_byte, st.worker_threads, st.slabs_sent, st.gpu_devices,
          st.gpu_memory_used_bytes, st.gpu_memory_total_bytes, st.bytes_fetched, st.s3_requests,
          st.s3_retries, st.s3_failures);
      fbb.Finish(fbs::CreateMessage(fbb, fbs::Body::StatusReply, reply.Union()));
      return send(c, fbb);
    }
    case fbs::Body::Open: {
      const auto* o = m.body_as_Open();
      OC_EXPECT(o->uri(), protocol, "Open without a uri");
      if (c.files.size() + c.opening.size() >= cfg_.daemon_client_max_open_files) {
        send_error(c, o->request(),
                   Error(Errc::invalid, fmt::format("this connection has {} files open, the limit "
                                                    "(daemon_client_max_open_files)",
                                                    c.files.size() + c.opening.size())));
        return {};
      }
      open_async(c, o->request(), o->uri()->str(), o->unit_rows());
      return {};
    }
    case fbs::Body::List: {
      const auto* l = m.body_as_List();
      OC_EXPECT(l->pattern(), protocol, "List without a pattern");
      if (l->offset() > 0 && l->pattern()->str() == c.listed_pattern) {
        return send_listed(c, l->request(), l->offset());
      }
      OC_EXPECT(l->offset() == 0, protocol, "List offset {} of a pattern not listed before",
                l->offset());
      list_async(c, l->request(), l->pattern()->str());
      return {};
    }
    case fbs::Body::Scan: {
      const auto* s = m.body_as_Scan();
      if (c.scans.size() + c.planning >= cfg_.daemon_client_max_scans) {
        send_error(c, s->request(),
                   Error(Errc::invalid, fmt::format("this connection has {} scans active, the "
                                                    "limit (daemon_client_max_scans)",
                                                    c.scans.size() + c.planning)));
        return {};
      }
      auto f = c.files.find(s->file());
      if (f == c.files.end()) {
        send_error(c, s->request(), Error(Errc::invalid, fmt::format("no open file {}", s->file())));
        return {};
      }
      plan_async(c, frame, s->request(), f->second);
      return {};
    }
    case fbs::Body::Release: {
      auto it = c.leases.find(m.body_as_Release()->lease());
      OC_EXPECT(it != c.leases.end(), protocol, "Release of unknown lease {}",
                m.body_as_Release()->lease());
      c.bytes_in_flight -= it->second.bytes;
      if (it->second.slab) give_back(c, it->second.slab, it->second.offset);
      c.leases.erase(it);
      return {};
    }
    case fbs::Body::Cancel: {
      const auto* cancel = m.body_as_Cancel();
      const uint64_t id = cancel->scan();
      // An Open cannot be interrupted on its worker; its result is dropped when it completes.
      if (id == 0) c.opening.erase(cancel->request());
      for (const ScanPtr& s : c.scans) {
        if (s->id == id) {
          drop_scan(c, s);
          break;
        }
      }
      return {};
    }
    case fbs::Body::Close: {
      // Scans hold the file too, so those running on it go on to their end.
      const uint64_t file = m.body_as_Close()->file();
      OC_EXPECT(c.files.erase(file) == 1, protocol, "Close of unknown file {}", file);
      return {};
    }
    default:
      return OC_ERROR(Errc::protocol, "unexpected message type {}",
                      fbs::EnumNameBody(m.body_type()));
  }
}

// Opening may wait on the network (S3, HTTP), so it runs on a worker; Opened is sent from the
// loop when it is done.
void Server::open_async(Client& c, uint64_t request, std::string uri, uint64_t unit_rows) {
  c.opening.insert(request);
  workers_->submit([this, fd = c.fd, serial = c.serial, request, uri = std::move(uri), unit_rows] {
    auto file = std::make_shared<Result<std::shared_ptr<format::VortexFile>>>(
        client::open_uri(uri));
    // Units read the layout tree, which may fetch nothing more but is still file work: here,
    // off the loop thread.
    auto units = std::make_shared<std::vector<uint64_t>>();
    if (file->ok() && unit_rows > 0) {
      auto u = format::file_units(***file, 0, unit_rows);
      if (!u.ok()) {
        *file = std::move(u.error());
      } else {
        for (const auto& unit : *u) units->insert(units->end(), {unit.begin, unit.end});
      }
    }
    return Workers::Completion([this, fd, serial, request, file, units] {
      Client* c = find(fd, serial);
      if (!c) return;
      auto pending = c->opening.find(request);
      if (pending == c->opening.end()) return;  // cancelled: no reply, the file is not kept
      c->opening.erase(pending);
      if (!file->ok()) {
        send_error(*c, request, file->error());
        return;
      }
      const uint64_t id = next_id_++;
      const uint64_t rows = (**file)->row_count();
      c->files[id] = std::move(**file);
      flatbuffers::FlatBufferBuilder fbb;
      auto reply = fbs::CreateOpenedDirect(fbb, request, id, rows, units->empty() ? nullptr : units.get());
      fbb.Finish(fbs::CreateMessage(fbb, fbs::Body::Opened, reply.Union()));
      if (auto r = send(*c, fbb); !r.ok()) disconnect(fd, r.error().to_string());
    });
  });
}

// Planning binds the filter and prunes with zone maps, which may fetch them from S3, and a
// sharded plan reads the layout: worker work, like Open. The job keeps its own copy of the
// request (the receive buffer is reused) and of the file (a Close may come meanwhile).
void Server::plan_async(Client& c, std::span<const uint8_t> frame, uint64_t request,
                        std::shared_ptr<format::VortexFile> file) {
  ++c.planning;
  auto copy = std::make_shared<std::vector<uint8_t>>(frame.begin(), frame.end());
  const uint64_t unit_rows = cfg_.shard_unit_rows;
  workers_->submit([this, fd = c.fd, serial = c.serial, request, file, copy, unit_rows] {
    // The frame was verified on receipt: its Message starts after the 8-byte header.
    const auto* scan = flatbuffers::GetRoot<fbs::Message>(copy->data() + 8)->body_as_Scan();
    auto planned = std::make_shared<Result<PlannedScan>>(plan_scan(*scan, file, unit_rows));
    auto nodes = std::make_shared<std::vector<SchemaNodeCopy>>();
    if (planned->ok()) {
      ArrowSchema schema{};
      if (auto er = format::export_schema(*(*planned)->scan->dtype(), "", &schema); !er.ok()) {
        *planned = std::move(er.error());
      } else {
        auto walk = [&](auto& self, const ArrowSchema& n) -> void {
          nodes->push_back({n.format, n.name ? n.name : "", n.flags,
                            static_cast<uint32_t>(n.n_children)});
          for (int64_t i = 0; i < n.n_children; ++i) self(self, *n.children[i]);
        };
        walk(walk, schema);
        schema.release(&schema);
      }
    }
    return Workers::Completion([this, fd, serial, request, file, planned, nodes] {
      Client* c = find(fd, serial);
      if (!c) return;
      --c->planning;
      if (!planned->ok()) {
        send_error(*c, request, planned->error());
        return;
      }
      flatbuffers::FlatBufferBuilder fbb;
      std::vector<flatbuffers::Offset<fbs::SchemaNode>> offsets;
      for (const auto& n : *nodes) {
        offsets.push_back(fbs::CreateSchemaNodeDirect(fbb, n.format.c_str(), n.name.c_str(),
                                                      n.flags, n.n_children));
      }
      auto as = std::make_shared<ActiveScan>();
      as->id = next_id_++;
      as->file = file;
      as->scan = std::move((*planned)->scan);
      auto reply = fbs::CreateScanBeginDirect(fbb, request, as->id, &offsets, (*planned)->units);
      fbb.Finish(fbs::CreateMessage(fbb, fbs::Body::ScanBegin, reply.Union()));
      c->scans.push_back(std::move(as));
      if (auto r = send(*c, fbb); !r.ok()) disconnect(fd, r.error().to_string());
    });
  });
}

// Listing an S3 prefix is network work, so it runs on a worker like Open.
void Server::list_async(Client& c, uint64_t request, std::string pattern) {
  workers_->submit([this, fd = c.fd, serial = c.serial, request, pattern] {
    auto uris = std::make_shared<Result<std::vector<std::string>>>(client::expand_uri(pattern));
    return Workers::Completion([this, fd, serial, request, pattern, uris] {
      Client* c = find(fd, serial);
      if (!c) return;
      if (!uris->ok()) {
        send_error(*c, request, uris->error());
        return;
      }
      c->listed_pattern = pattern;
      c->listed = std::move(**uris);
      if (auto r = send_listed(*c, request, 0); !r.ok()) disconnect(fd, r.error().to_string());
    });
  });
}

Result<void> Server::send_listed(Client& c, uint64_t request, uint64_t offset) {
  OC_EXPECT(offset <= c.listed.size(), protocol, "List offset {} is past the {} names", offset,
            c.listed.size());
  flatbuffers::FlatBufferBuilder fbb;
  std::vector<flatbuffers::Offset<flatbuffers::String>> names;
  size_t i = offset;
  for (size_t bytes = 0; i < c.listed.size() && bytes < kListPartBytes; ++i) {
    names.push_back(fbb.CreateString(c.listed[i]));
    bytes += c.listed[i].size() + 8;
  }
  auto reply = fbs::CreateListed(fbb, request, fbb.CreateVector(names), i < c.listed.size());
  fbb.Finish(fbs::CreateMessage(fbb, fbs::Body::Listed, reply.Union()));
  return send(c, fbb);
}

// Keeps up to daemon_client_max_batches_in_flight batches of the scan decoded ahead, one job at
// a time (scan->next() is sequential), within the client's byte limit; the first batch always
// goes. A batch is decoded on a worker, placed in a slab range here, then copied on a worker.
void Server::decode_ahead(Client& c, const ScanPtr& s) {
  if (s->busy || s->unplaced || s->finished ||
      s->ready.size() >= cfg_.daemon_client_max_batches_in_flight) {
    return;
  }
  if (!s->ready.empty() &&
      s->ready_bytes + c.bytes_in_flight >= cfg_.daemon_client_max_bytes_in_flight) {
    return;
  }
  s->busy = true;
  workers_->submit([this, fd = c.fd, serial = c.serial, s] {
    auto p = std::make_shared<Produced>();
    auto layout = std::make_shared<std::optional<BatchLayout>>();
    const uint64_t read_before = s->scan->stats().bytes_read;
    auto next = s->scan->next();
    const format::UnitPosition position = position_after(*s->scan);
    fetched_ += s->scan->stats().bytes_read - read_before;
    if (!next.ok()) {
      p->error = std::move(next.error());
    } else if (*next) {
      *layout = lay_out(std::move(**next));
    }
    return Workers::Completion([this, fd, serial, s, p, layout, position] {
      on_decoded(fd, serial, s, std::move(*p), std::move(*layout), position);
    });
  });
}

void Server::on_decoded(int fd, uint64_t serial, const ScanPtr& s, Produced p,
                        std::optional<BatchLayout> layout, const format::UnitPosition& position) {
  s->busy = false;
  Client* c = find(fd, serial);
  if (!c || s->dropped) return;
  if (!layout) {  // the scan's end or error
    s->finished = true;
    s->ready.push_back(std::move(p));
    return;
  }
  s->unplaced = std::move(layout);
  s->unplaced_position = position;
  place(*c, s);
}

// Finds a range for the scan's decoded batch: first fit in the client's slabs, else a new slab
// (of the batch's own size when it is larger than daemon_slab_bytes) if the pool has room.
// Without room it waits for a Release; but a client that holds nothing may always have a slab
// made, so that no client waits forever on the slabs of others (one batch always goes).
void Server::place(Client& c, const ScanPtr& s) {
  if (!s->unplaced || s->busy) return;
  Placed p;
  const uint64_t need = s->unplaced->bytes;
  if (need > 0) {
    for (const auto& [id, slab] : c.slabs) {
      if (slab->dedicated()) continue;
      if (auto at = slab->ranges.allocate(need)) {
        p.slab = slab;
        p.offset = *at;
        break;
      }
    }
    if (!p.slab) {
      const bool dedicated = need > cfg_.daemon_slab_bytes;
      const uint64_t size = dedicated ? need : cfg_.daemon_slab_bytes;
      const bool holds_nothing = c.leases.empty() && s->ready.empty();
      if (pool_bytes() + size > cfg_.daemon_pool_bytes && !holds_nothing) return;
      auto made = Slab::create(next_id_++, size, dedicated);
      if (!made.ok()) {
        s->unplaced.reset();
        s->finished = true;
        s->ready.push_back(Produced{std::nullopt, std::move(made.error())});
        return;
      }
      p.slab = std::move(*made);
      auto& log = log::get();
      const auto level = logged_pages_ ? spdlog::level::debug : spdlog::level::info;
      log.log(level, "slab {} for client pid {}: {} bytes{}, {}", p.slab->id(), c.cred.pid,
              p.slab->bytes(), dedicated ? " (one large batch)" : "",
              p.slab->hugepages() ? "hugepages" : "normal pages (no hugepages to spare)");
      logged_pages_ = true;
      c.slabs[p.slab->id()] = p.slab;
      p.offset = *p.slab->ranges.allocate(need);
    }
  }
  p.layout = std::move(*s->unplaced);
  p.position = s->unplaced_position;
  s->unplaced.reset();
  if (!p.slab) {
    s->ready.push_back(Produced{std::move(p), std::nullopt});
    return;
  }
  s->busy = true;
  auto job = std::make_shared<Placed>(std::move(p));
  workers_->submit([this, fd = c.fd, serial = c.serial, s, job] {
    // Writes only inside the range the loop gave this job; the slab outlives it (shared).
    job->copied = copy_batch(job->layout, job->slab->base() + job->offset);
    return Workers::Completion(
        [this, fd, serial, s, job] { on_copied(fd, serial, s, std::move(*job)); });
  });
}

void Server::on_copied(int fd, uint64_t serial, const ScanPtr& s, Placed p) {
  s->busy = false;
  bytes_copied_ += p.copied;  // counted whether or not it is ever sent
  Client* c = find(fd, serial);
  if (!c) return;  // the slab went with the client
  if (s->dropped) {
    give_back(*c, p.slab, p.offset);
    return;
  }
  s->ready_bytes += p.layout.bytes;
  s->ready.push_back(Produced{std::move(p), std::nullopt});
}

// Frees a range; a dedicated slab goes with its one batch.
void Server::give_back(Client& c, const std::shared_ptr<Slab>& slab, uint64_t offset) {
  slab->ranges.free(offset);
  if (slab->dedicated() && slab->ranges.empty()) c.slabs.erase(slab->id());
}

// Drops a scan and the ranges of its batches not yet sent; a job still running on it gives its
// own range back when it completes.
void Server::drop_scan(Client& c, const ScanPtr& s) {
  s->dropped = true;
  for (const Produced& p : s->ready) {
    if (p.batch && p.batch->slab) give_back(c, p.batch->slab, p.batch->offset);
  }
  s->ready.clear();
  s->ready_bytes = 0;
  std::erase(c.scans, s);
}

// Sends the Batch message for a placed batch, after its slab's descriptor if this is the
// slab's first batch.
Result<void> Server::send_batch(Client& c, ActiveScan& s, const Placed& b) {
  if (b.slab && !b.slab->sent) {
    flatbuffers::FlatBufferBuilder fbb;
    auto added = fbs::CreateSlabAdded(fbb, b.slab->id(), b.slab->bytes(), b.slab->dedicated());
    fbb.Finish(fbs::CreateMessage(fbb, fbs::Body::SlabAdded, added.Union()));
    OC_TRY(send(c, fbb, b.slab->fd()));
    b.slab->sent = true;
    ++slabs_sent_;
  }
  flatbuffers::FlatBufferBuilder fbb;
  std::vector<flatbuffers::Offset<fbs::ArrayNode>> arrays;
  std::vector<fbs::BufferRef> bufs;
  for (const SlabArray& a : b.layout.arrays) {
    bufs.clear();
    for (const fbs::BufferRef& r : a.buffers) {
      bufs.emplace_back(r.offset() + b.offset, r.length(), r.present());
    }
    arrays.push_back(
        fbs::CreateArrayNodeDirect(fbb, a.length, a.null_count, a.offset, &bufs, a.n_children));
  }
  const uint64_t lease = next_id_++;
  const uint64_t bytes = b.layout.bytes;
  auto msg = fbs::CreateBatchDirect(fbb, s.id, lease, b.layout.rows, bytes, &arrays, b.position.unit,
                                    b.position.rows, b.slab ? b.slab->id() : 0, b.offset);
  fbb.Finish(fbs::CreateMessage(fbb, fbs::Body::Batch, msg.Union()));
  OC_TRY(send(c, fbb));
  c.leases[lease] = Client::Lease{b.slab, b.offset, bytes};
  c.bytes_in_flight += bytes;
  bytes_delivered_ += b.copied;
  batches_delivered_ += 1;
  delivered_rate_.add(
      std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - started_).count(),
      b.copied);
  s.rows += b.layout.rows;
  s.batches += 1;
  s.bytes += bytes;
  return {};
}

bool Server::service(Client& c) {
  while (!c.scans.empty()) {
    const ScanPtr s = c.scans.front();
    while (!s->ready.empty()) {
      Produced& p = s->ready.front();
      if (p.batch) {
        if (!c.leases.empty() && (c.leases.size() >= cfg_.daemon_client_max_batches_in_flight ||
                                  c.bytes_in_flight >= cfg_.daemon_client_max_bytes_in_flight)) {
          break;  // backpressure: wait for Release
        }
        if (auto r = send_batch(c, *s, *p.batch); !r.ok()) {
          disconnect(c.fd, r.error().to_string());
          return false;
        }
        s->ready_bytes -= p.batch->layout.bytes;
        s->ready.pop_front();
        continue;
      }
      c.scans.pop_front();
      if (p.error) {
        send_error(c, s->id, *p.error);
        break;
      }
      flatbuffers::FlatBufferBuilder fbb;
      auto end = fbs::CreateScanEnd(fbb, s->id, s->rows, s->batches, s->bytes);
      fbb.Finish(fbs::CreateMessage(fbb, fbs::Body::ScanEnd, end.Union()));
      if (auto r = send(c, fbb); !r.ok()) {
        disconnect(c.fd, r.error().to_string());
        return false;
      }
      break;
    }
    if (!c.scans.empty() && c.scans.front() == s) {
      place(c, s);  // a Release may have made room
      decode_ahead(c, s);
      return true;
    }
  }
  return true;
}

void Server::reload() {
  auto fresh = load_config(config_path_, config_optional_);
  if (!fresh.ok()) {
    log::get().error("SIGHUP: config not reloaded: {}", fresh.error().to_string());
    return;
  }
  // Runtime-changeable knobs; the socket, limits on messages and the pool keep their values.
  cfg_.log_level = fresh->log_level;
  cfg_.daemon_max_clients = fresh->daemon_max_clients;
  cfg_.daemon_client_max_batches_in_flight = fresh->daemon_client_max_batches_in_flight;
  cfg_.daemon_client_max_bytes_in_flight = fresh->daemon_client_max_bytes_in_flight;
  cfg_.daemon_client_max_open_files = fresh->daemon_client_max_open_files;
  cfg_.daemon_client_max_scans = fresh->daemon_client_max_scans;
  cfg_.daemon_allowed_uids = fresh->daemon_allowed_uids;
  cfg_.daemon_allowed_gids = fresh->daemon_allowed_gids;
  (void)log::init(cfg_.log_level);
  log::get().info("SIGHUP: config reloaded from {}: log_level={}", config_path_, cfg_.log_level);
}

int Server::run() {
  sd_notify("READY=1\nSTATUS=serving on " + cfg_.daemon_socket);
  std::vector<epoll_event> events(64);
  while (true) {
    const int n = ::epoll_wait(epoll_, events.data(), static_cast<int>(events.size()), -1);
    for (int i = 0; i < n; ++i) {
      const int fd = events[static_cast<size_t>(i)].data.fd;
      if (fd == listen_) {
        accept_clients();
      } else if (fd == signal_) {
        signalfd_siginfo si{};
        while (::read(signal_, &si, sizeof(si)) == sizeof(si)) {
          if (si.ssi_signo == SIGHUP) {
            sd_notify("RELOADING=1");
            reload();
            sd_notify("READY=1");
          } else {
            log::get().info("signal {}: stopping", si.ssi_signo);
            sd_notify("STOPPING=1");
            while (!clients_.empty()) disconnect(clients_.begin()->first, "");
            return 0;
          }
        }
      } else if (fd == watchdog_) {
        uint64_t ticks;
        (void)::read(watchdog_, &ticks, sizeof(ticks));
        sd_notify(fmt::format("WATCHDOG=1\nSTATUS={} clients, {} bytes delivered",
                              clients_.size(), bytes_delivered_));
      } else if (fd == workers_->event_fd()) {
        workers_->drain();
      } else if (fd == metrics_) {
        accept_http();
      } else if (http_.count(fd)) {
        on_http(fd);
      } else if (auto t = http_timers_.find(fd); t != http_timers_.end()) {
        close_http(t->second);  // too slow
      } else if (auto it = clients_.find(fd); it != clients_.end()) {
        on_readable(*it->second);
      }
    }
    // Releases, completions and new scans all may let a client's scans go on.
    std::vector<int> fds;
    for (const auto& [fd, c] : clients_) fds.push_back(fd);
    for (int fd : fds) {
      if (auto it = clients_.find(fd); it != clients_.end()) (void)service(*it->second);
    }
  }
}

int usage() {
  fmt::print(stderr,
             "usage: onecopyd [--config PATH] [--socket PATH] [--print-example-config]\n"
             "Serves Vortex scans over a Unix socket (daemon/PROTOCOL.md).\n");
  return 2;
}

}  // namespace
}  // namespace oc::daemon

int main(int argc, char** argv) {
  using namespace oc::daemon;
  std::string config_path = kDefaultConfigPath, socket;
  bool optional = true;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--config" && i + 1 < argc) {
      config_path = argv[++i];
      optional = false;
    } else if (a == "--socket" && i + 1 < argc) {
      socket = argv[++i];
    } else if (a == "--print-example-config") {
      fmt::print("{}", example_config());
      return 0;
    } else {
      return usage();
    }
  }
  auto cfg = load_config(config_path, optional);
  if (!cfg.ok()) {
    fmt::print(stderr, "onecopyd: {}\n", cfg.error().to_string());
    return 1;
  }
  if (!socket.empty()) {
    for (const auto& k : oc::knob_table()) {
      if (k.name == "daemon_socket") {
        auto r = k.apply(*cfg, socket);
        if (!r.ok()) {
          fmt::print(stderr, "onecopyd: --socket: {}\n", r.error().to_string());
          return 1;
        }
      }
    }
  }
  if (auto r = oc::log::init(cfg->log_level); !r.ok()) return 1;
  Server server(*cfg, config_path, optional);
  if (auto r = server.setup(); !r.ok()) {
    oc::log::get().critical("{}", r.error().to_string());
    return 1;
  }
  return server.run();
}
