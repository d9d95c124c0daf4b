// SPDX-License-Identifier: Apache-2.0
#include "net/connection.hpp"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <atomic>

#include "config/defaults.hpp"
#include "config/fd.hpp"
#include "net/address.hpp"
#include "net/resolver.hpp"
#include "net/tls.hpp"

namespace oc::net {

const char* transport_name(Transport t) noexcept {
  switch (t) {
    case Transport::plain:
      return "plain";
    case Transport::tls:
      return "tls";
    case Transport::ktls:
      return "ktls";
  }
  return "unknown";
}

struct Connection::State {
  UniqueFd fd;
  std::string peer;
  ConnectionCounters counters;
  std::unique_ptr<detail::TlsSession> tls;  // declared after fd: destroyed before the close
  std::atomic<bool> aborted{false};
};

namespace {

// Tries each resolved address in order (e.g. ::1 then 127.0.0.1 for "localhost") until one
// connects; a timeout ends the attempt since the deadline is shared.
Result<UniqueFd> connect_any(const ConnectOptions& o, const std::string& peer) {
  Resolver& resolver = o.resolver != nullptr ? *o.resolver : Resolver::global();
  auto resolved = resolver.resolve(o.host, o.port, o.deadline);
  if (!resolved.ok())
    return std::move(resolved).error().with_context(fmt::format("connecting to {}", peer));
  OC_ASSIGN_OR_RETURN(Ring * ring, Ring::this_thread());
  Error last = OC_ERROR(Errc::io, "{} resolved to no address", peer);
  for (const ResolvedAddress& a : *resolved) {
    // Checked on the address about to be connected, so a name rebound between a check and the
    // connect cannot reach an internal host.
    if (o.public_only && !is_public_address(a.addr())) {
      last = OC_ERROR(Errc::denied,
                      "{} resolves to {}, which is not a public address (loopback, link-local "
                      "and private hosts are fetched only when onecopyd's daemon_http_hosts "
                      "names them)",
                      peer, address_text(a.addr()));
      continue;
    }
    UniqueFd fd(socket(a.storage.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!fd.valid()) {
      last = errno_error(errno, fmt::format("socket for {}", peer), __FILE__, __LINE__);
      continue;
    }
    // Requests are written whole; Nagle would only delay the last partial segment.
    const int one = 1;
    setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    auto connected = ring->connect(fd.get(), a.addr(), a.length, o.deadline);
    if (connected.ok()) return fd;
    last = std::move(connected).error().with_context(fmt::format("connecting to {}", peer));
    if (last.code() == Errc::timeout) break;
  }
  return last;
}

}  // namespace

Connection::Connection() : state_(std::make_unique<State>()) {}

Connection::~Connection() {
  if (state_->tls && !state_->aborted.load()) state_->tls->close_notify();
}

Result<std::unique_ptr<Connection>> Connection::open(const ConnectOptions& options) {
  OC_EXPECT(!options.host.empty() && options.port != 0, invalid, "connect: empty host or port 0");
  std::unique_ptr<Connection> c(new Connection());
  State& s = *c->state_;
  s.peer = fmt::format("{}:{}", options.host, options.port);
  ConnectOptions o = options;
  if (o.deadline == Deadline{}) {
    o.deadline = Clock::now() + std::chrono::milliseconds(defaults().http_connect_timeout_ms);
  }
  OC_ASSIGN_OR_RETURN(s.fd, connect_any(o, s.peer));
  if (o.tls) {
    // SNI and verification take an IPv6 literal without its URL brackets.
    const std::string name(unbracketed(o.host));
    OC_ASSIGN_OR_RETURN(s.tls, detail::TlsSession::handshake(s.fd.get(), name, s.peer, *o.tls,
                                                             o.deadline, s.counters));
  }
  return c;
}

Result<void> Connection::send_all(std::span<const iovec> pieces, Deadline deadline) {
  State& s = *state_;
  if (s.tls) {
    OC_TRY(s.tls->send_all(pieces, deadline));
  } else {
    OC_ASSIGN_OR_RETURN(Ring * ring, Ring::this_thread());
    OC_TRY(ring->send_all(s.fd.get(), pieces, deadline));
  }
  for (const iovec& p : pieces) s.counters.bytes_sent += p.iov_len;
  return {};
}

Result<size_t> Connection::recv(std::span<std::byte> dest, Deadline deadline) {
  State& s = *state_;
  size_t got = 0;
  if (s.tls) {
    OC_ASSIGN_OR_RETURN(got, s.tls->recv(dest, deadline));
  } else {
    OC_ASSIGN_OR_RETURN(Ring * ring, Ring::this_thread());
    ++s.counters.receive_calls;
    OC_ASSIGN_OR_RETURN(got, ring->recv(s.fd.get(), dest, deadline));
  }
  s.counters.bytes_received += got;
  return got;
}

void Connection::abort() noexcept {
  state_->aborted.store(true);
  shutdown(state_->fd.get(), SHUT_RDWR);
}

Transport Connection::transport() const noexcept {
  return state_->tls ? state_->tls->transport() : Transport::plain;
}
const std::string& Connection::peer() const noexcept { return state_->peer; }
const ConnectionCounters& Connection::counters() const noexcept { return state_->counters; }

}  // namespace oc::net
