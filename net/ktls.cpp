// SPDX-License-Identifier: Apache-2.0
// Kernel TLS: OpenSSL handshakes on a plain socket BIO and installs the record keys in the kernel;
// afterwards the ring moves plaintext, and only non-data records need looking at.
#include <fcntl.h>
#include <linux/tls.h>
#include <openssl/err.h>
#include <poll.h>
#include <sys/socket.h>

#include <atomic>

#include "config/log.hpp"
#include "net/tls.hpp"

namespace oc::net::detail {
namespace {

std::atomic<bool> g_ktls_enabled{true};

// TLS record content types (RFC 8446 §5.1) and the handshake/alert codes acted on.
constexpr unsigned char kAlert = 21;
constexpr unsigned char kHandshake = 22;
constexpr unsigned char kApplicationData = 23;
constexpr unsigned char kNewSessionTicket = 4;
constexpr unsigned char kKeyUpdate = 24;
constexpr unsigned char kCloseNotify = 0;

}  // namespace

bool ktls_enabled() noexcept { return g_ktls_enabled.load(std::memory_order_relaxed); }
void disable_ktls() noexcept { g_ktls_enabled.store(false, std::memory_order_relaxed); }

Result<int> TlsSession::on_socket_bio(const char* what, Deadline deadline,
                                      const std::function<int()>& call) {
  // Non-blocking only for the call: the ring's own receives on this socket expect a blocking
  // one (io_uring arms a poll for those instead of failing with EAGAIN).
  const int flags = ::fcntl(fd_, F_GETFL);
  if (flags < 0 || ::fcntl(fd_, F_SETFL, flags | O_NONBLOCK) != 0) {
    return errno_error(errno, "fcntl(O_NONBLOCK)", __FILE__, __LINE__);
  }
  struct Restore {
    int fd, flags;
    ~Restore() { (void)::fcntl(fd, F_SETFL, flags); }
  } restore{fd_, flags};
  OC_ASSIGN_OR_RETURN(Ring * ring, Ring::this_thread());
  for (;;) {
    ERR_clear_error();
    const int rc = call();
    if (rc == 1) return rc;
    const int err = SSL_get_error(ssl_, rc);
    if (err != SSL_ERROR_WANT_READ && err != SSL_ERROR_WANT_WRITE) return failure(what, rc);
    auto ready = ring->poll(fd_, err == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, deadline);
    if (!ready.ok()) {
      if (ready.error().code() == Errc::timeout) {
        return OC_ERROR(Errc::timeout, "TLS {} with {} timed out", what, peer_);
      }
      return std::move(ready).error();
    }
  }
}

Result<void> TlsSession::handshake_ktls(Deadline deadline) {
  SSL_set_options(ssl_, SSL_OP_ENABLE_KTLS);
  BIO* sock = BIO_new_socket(fd_, BIO_NOCLOSE);
  OC_EXPECT(sock != nullptr, protocol, "TLS: BIO_new_socket: {}", openssl_errors());
  SSL_set_bio(ssl_, sock, sock);
  // OpenSSL moves the handshake's bytes itself; each wait is a ring poll, so a fiber suspends
  // instead of blocking its reactor.
  OC_TRY(on_socket_bio("handshake", deadline, [this] { return SSL_connect(ssl_); }));
  const bool send = BIO_get_ktls_send(SSL_get_wbio(ssl_)) != 0;
  const bool recv = BIO_get_ktls_recv(SSL_get_rbio(ssl_)) != 0;
  if (send && recv) {
    transport_ = Transport::ktls;
    return {};
  }
  // The kernel did not take the receive side (OpenSSL 3.0 has no TLS 1.3 kTLS receive, or the
  // cipher is not offloadable): receive in userspace through the ring. OpenSSL buffers records in
  // the SSL object, not the BIO, so swapping BIOs after the handshake loses nothing.
  log::get().debug("net: {}: kTLS send {}, receive off; receiving in userspace", peer_,
                   send ? "on" : "off");
  BIO* ring = new_ring_bio();
  OC_EXPECT(ring != nullptr, protocol, "TLS: cannot create the ring BIO: {}", openssl_errors());
  if (send) {
    SSL_set_bio(ssl_, ring, SSL_get_wbio(ssl_));
  } else {
    SSL_set_bio(ssl_, ring, ring);
  }
  ktls_send_only_ = send;
  return {};
}

Result<size_t> TlsSession::recv_ktls(std::span<std::byte> dest, Deadline deadline) {
  OC_ASSIGN_OR_RETURN(Ring * ring, Ring::this_thread());
  for (;;) {
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(unsigned char))];
    iovec iov{dest.data(), dest.size()};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    ++counters_.receive_calls;
    OC_ASSIGN_OR_RETURN(const size_t n, ring->recvmsg(fd_, &msg, deadline));
    const cmsghdr* c = CMSG_FIRSTHDR(&msg);
    const bool typed =
        c != nullptr && c->cmsg_level == SOL_TLS && c->cmsg_type == TLS_GET_RECORD_TYPE;
    const unsigned char type = typed ? *CMSG_DATA(c) : kApplicationData;
    if (type == kApplicationData) return n;  // includes 0 at end of stream
    const auto first = n > 0 ? std::to_integer<unsigned char>(dest[0]) : 0;
    if (type == kHandshake && first == kNewSessionTicket) continue;  // no resumption: ignore
    if (type == kHandshake && first == kKeyUpdate) {
      disable_ktls();
      return OC_ERROR(
          Errc::protocol,
          "kTLS: peer sent a TLS KeyUpdate; the kernel cannot rekey, reconnect with userspace TLS");
    }
    if (type == kAlert && n >= 2 && std::to_integer<unsigned char>(dest[1]) == kCloseNotify)
      return size_t{0};
    return OC_ERROR(Errc::protocol, "kTLS read from {}: unexpected TLS record type {} ({} bytes)",
                    peer_, type, n);
  }
}

}  // namespace oc::net::detail
