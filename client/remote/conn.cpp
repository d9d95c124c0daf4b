// SPDX-License-Identifier: Apache-2.0
#include "client/remote/conn.hpp"

#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>

#include "config/defaults.hpp"
#include "onecopy_build_config.h"

namespace oc::client {

// The protocol both sides speak (daemon/wire.hpp, daemon/protocol.fbs, daemon/status.hpp).
using namespace oc::daemon;  // NOLINT(google-build-using-namespace)
namespace {

// The largest reply the library accepts, Parts joined: a million units (16 MB) fit.
constexpr size_t kMaxReply = 64 << 20;

timeval timeval_of(uint32_t ms) {
  return timeval{static_cast<time_t>(ms / 1000), static_cast<suseconds_t>(ms % 1000) * 1000};
}

Error lost(const char* what, int err = 0) {
  return Error(Errc::io, fmt::format("daemon connection lost: {}", what), __FILE__, __LINE__, err);
}

}  // namespace

MappedSlab::~MappedSlab() {
  if (base != nullptr && !device_memory) ::munmap(base, bytes);
}

Conn::Conn(UniqueFd fd) : fd_(std::move(fd)), pid_(::getpid()), parts_(kMaxReply) {}

bool Conn::ours() const { return ::getpid() == pid_; }

Result<std::shared_ptr<Conn>> Conn::open(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  OC_EXPECT(path.size() < sizeof(addr.sun_path), invalid, "socket path too long: {}", path);
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  UniqueFd fd(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return Error(Errc::io, "socket()", __FILE__, __LINE__, errno);
  // A blocking connect to a full backlog (a busy daemon, or one that stopped accepting at its
  // descriptor limit) waits at most SO_SNDTIMEO.
  const Defaults& d = defaults();
  const timeval connect_timeout = timeval_of(d.client_connect_timeout_ms);
  ::setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &connect_timeout, sizeof connect_timeout);
  int rc;
  do {
    rc = ::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  } while (rc != 0 && errno == EINTR);
  if (rc != 0 && errno != EISCONN) {
    if (errno == EAGAIN || errno == EINPROGRESS) {
      return Error(Errc::timeout,
                   fmt::format("onecopyd at {} did not accept the connection within {} ms "
                               "(client_connect_timeout_ms): busy, or at its descriptor limit",
                               path, d.client_connect_timeout_ms),
                   __FILE__, __LINE__);
    }
    return Error(Errc::io, fmt::format("cannot connect to onecopyd at {}", path), __FILE__,
                 __LINE__, errno);
  }
  // 0 is no timeout, for SO_SNDTIMEO as for the knob.
  const timeval reply_timeout = timeval_of(d.client_reply_timeout_ms);
  ::setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &reply_timeout, sizeof reply_timeout);
  std::shared_ptr<Conn> conn(new Conn(std::move(fd)));
  flatbuffers::FlatBufferBuilder fbb;
  auto hello = fbs::CreateHelloDirect(fbb, kProtocolVersion, nullptr, "libonecopy " OC_VERSION);
  fbb.Finish(fbs::CreateMessage(fbb, fbs::Body::Hello, hello.Union()));
  // A daemon that refuses the connection (a limit, the access policy) sends an Error and
  // closes at once: then the Hello may fail to go, and the Error says why.
  auto sent = conn->send(fbb);
  auto answer = conn->recv(nullptr);
  // A close with our Hello unread resets the connection: the reset is reported once, ahead of
  // the Error still queued for us.
  if (!answer.ok() && answer.error().sys_errno() == ECONNRESET) answer = conn->recv(nullptr);
  if (!answer.ok() && answer.error().message().starts_with("onecopyd: ")) {
    return std::move(answer.error());
  }
  OC_TRY(sent);
  OC_ASSIGN_OR_RETURN(const fbs::Message* m, std::move(answer));
  const auto* reply = m->body_as_HelloReply();
  OC_EXPECT(reply, protocol, "onecopyd did not answer Hello");
  conn->max_batches = reply->max_batches_in_flight();
  conn->max_bytes = reply->max_bytes_in_flight();
  return conn;
}

Result<void> Conn::send(flatbuffers::FlatBufferBuilder& fbb, int fd) {
  OC_EXPECT(ours(), invalid,
            "this onecopyd connection belongs to process {}, not to this one (a fork): it is "
            "never used here",
            pid_);
  auto packets = packets_of(make_frame(fbb));
  std::lock_guard lock(send_mu_);  // the Parts of one message go together
  for (size_t i = 0; i < packets.size(); ++i) {
    const ssize_t n =
        send_packet(fd_.get(), packets[i], i + 1 == packets.size() ? fd : -1, MSG_NOSIGNAL);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      return Error(Errc::timeout,
                   fmt::format("onecopyd took no request within {} ms (client_reply_timeout_ms)",
                               defaults().client_reply_timeout_ms),
                   __FILE__, __LINE__);
    }
    if (n < 0) return lost("send to onecopyd failed", errno);
  }
  return {};
}

Result<void> Conn::wait_readable() const {
  const uint32_t ms = defaults().client_reply_timeout_ms;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (true) {
    int wait = -1;
    if (ms != 0) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      wait = static_cast<int>(std::max<int64_t>(left.count(), 0));
    }
    pollfd p{fd_.get(), POLLIN, 0};
    const int rc = ::poll(&p, 1, wait);
    if (rc > 0) return {};
    if (rc < 0 && errno == EINTR) continue;
    if (rc < 0) return lost("poll failed", errno);
    return Error(Errc::timeout,
                 fmt::format("no reply from onecopyd within {} ms (client_reply_timeout_ms)", ms),
                 __FILE__, __LINE__);
  }
}

Result<const fbs::Message*> Conn::recv(int* fd) {
  OC_EXPECT(ours(), invalid,
            "this onecopyd connection belongs to process {}, not to this one (a fork): it is "
            "never used here",
            pid_);
  if (fd) *fd = -1;
  while (true) {
    OC_TRY(wait_readable());
    // Peek the packet's length first (MSG_TRUNC on SOCK_SEQPACKET, Linux 3.4+): packets are
    // small, and a buffer sized for the largest reply would cost a clear per connection.
    ssize_t len;
    do {
      len = ::recv(fd_.get(), nullptr, 0, MSG_PEEK | MSG_TRUNC | MSG_DONTWAIT);
    } while (len < 0 && errno == EINTR);
    // The daemon answers every request, so an end of stream means it went away (a restart, a
    // crash, or a disconnect for cause after its Error); io, so that clients may reconnect.
    if (len < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) continue;
    if (len < 0) return lost("recv from onecopyd failed", errno);
    if (len == 0) return lost("onecopyd closed the connection");
    OC_EXPECT(static_cast<size_t>(len) <= kMaxReply, protocol,
              "a {}-byte reply is over the {}-byte limit", len, kMaxReply);
    if (buf_.size() < static_cast<size_t>(len)) buf_.resize(static_cast<size_t>(len));
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 4)];
    iovec iov{buf_.data(), buf_.size()};
    msghdr mh{};
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = control;
    mh.msg_controllen = sizeof(control);
    ssize_t n;
    do {
      n = ::recvmsg(fd_.get(), &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
    } while (n < 0 && errno == EINTR);
    if (n < 0) return lost("recv from onecopyd failed", errno);
    if (n == 0) return lost("onecopyd closed the connection");
    UniqueFd got = first_descriptor(mh);
    OC_ASSIGN_OR_RETURN(const fbs::Message* m,
                        parse_frame({buf_.data(), static_cast<size_t>(n)}, kMaxReply));
    if (const auto* part = m->body_as_Part()) {
      OC_ASSIGN_OR_RETURN(auto whole, parts_.add(*part));
      if (!whole) continue;  // a descriptor comes with the last part only
      joined_ = std::move(*whole);
      OC_ASSIGN_OR_RETURN(m, parse_frame(joined_, kMaxReply));
      OC_EXPECT(m->body_type() != fbs::Body::Part, protocol, "a Part inside a Part");
    }
    if (const auto* e = m->body_as_Error()) {
      // The daemon names its error class; keep it so callers can branch on it.
      const std::string name = e->code() ? e->code()->str() : "";
      const Errc code = errc_from_name(name).value_or(Errc::protocol);
      std::string_view text = e->message() ? e->message()->string_view() : "";
      if (text.starts_with(name + ": ")) text.remove_prefix(name.size() + 2);  // said once
      return Error(code, fmt::format("onecopyd: {}", text));
    }
    if (fd) *fd = got.release();
    return m;
  }
}

bool Conn::quiet() const {
  pollfd p{fd_.get(), POLLIN | POLLRDHUP, 0};
  return ::poll(&p, 1, 0) == 0;
}

bool Conn::past_half_limit() const {
  // One batch alone is never copied: copying it would free nothing another batch could use.
  const uint64_t n = held_batches.load();
  if (n <= 1) return false;
  return (max_batches && n > max_batches / 2) || (max_bytes && held_bytes.load() > max_bytes / 2);
}

bool Conn::starved() const {
  const uint64_t n = held_batches.load();
  const bool at_limit =
      n > 0 && ((max_batches && n >= max_batches) || (max_bytes && held_bytes.load() >= max_bytes));
  if (!at_limit) return false;
  pollfd p{fd_.get(), POLLIN, 0};
  return ::poll(&p, 1, 0) == 0;
}

}  // namespace oc::client
