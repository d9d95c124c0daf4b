// SPDX-License-Identifier: Apache-2.0
#include "daemon/socket_io.hpp"

#include <sys/socket.h>

#include <cstring>
#include <optional>

#include "daemon/wire.hpp"

namespace oc::daemon {

Result<std::optional<Packet>> receive_packet(int sock, std::span<uint8_t> buf) {
  // Room for a few descriptors: more than one is a client's mistake, and the kernel closes
  // whatever does not fit (MSG_CTRUNC).
  constexpr size_t kMaxFds = 4;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFds)];
  iovec iov{buf.data(), buf.size()};
  msghdr mh{};
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  mh.msg_control = control;
  mh.msg_controllen = sizeof control;
  ssize_t n;
  do {
    n = ::recvmsg(sock, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return std::optional<Packet>();
  if (n < 0 && errno == ECONNRESET) {
    // The peer closed with packets of ours unread (a scan it cancelled, a killed process): a
    // hang-up like any other, not an error of the connection.
    Packet p;
    p.eof = true;
    return std::optional<Packet>(std::move(p));
  }
  if (n < 0) return Error(Errc::io, "recv from a client", __FILE__, __LINE__, errno);
  Packet p;
  p.bytes = static_cast<size_t>(n);
  p.eof = n == 0;  // SOCK_SEQPACKET: the peer closed (an empty packet reads the same)
  p.truncated = (mh.msg_flags & MSG_TRUNC) != 0;
  p.fds_lost = (mh.msg_flags & MSG_CTRUNC) != 0;
  p.fd = first_descriptor(mh);
  return std::optional<Packet>(std::move(p));
}

void Outbox::push(std::vector<uint8_t> frame, int fd, std::function<void()> on_sent) {
  auto packets = packets_of(std::move(frame));
  for (size_t i = 0; i < packets.size(); ++i) {
    bytes_ += packets[i].size();
    const bool last = i + 1 == packets.size();
    queue_.push_back(Entry{std::move(packets[i]), last ? fd : -1,
                           last ? std::move(on_sent) : std::function<void()>{}});
  }
}

Result<bool> Outbox::flush(int sock) {
  while (!queue_.empty()) {
    Entry& e = queue_.front();
    const ssize_t n = send_packet(sock, e.packet, e.fd, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    // A client that exits with replies on their way resets the connection: a hang-up, as on
    // receive, not an error of the connection.
    if (n < 0 && (errno == ECONNRESET || errno == EPIPE)) return false;
    if (n < 0) return Error(Errc::io, "send to a client", __FILE__, __LINE__, errno);
    // A SOCK_SEQPACKET send is all or nothing.
    bytes_ -= e.packet.size();
    auto done = std::move(e.on_sent);
    queue_.pop_front();
    if (done) done();
  }
  return true;
}

}  // namespace oc::daemon
