// SPDX-License-Identifier: Apache-2.0
// Kernel TLS: OpenSSL handshakes on a plain socket BIO and installs the record keys in the kernel;
// afterwards the ring moves plaintext, and only non-data records need looking at.
#include <linux/tls.h>
#include <openssl/err.h>
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

Result<void> set_socket_timeouts(int fd, Deadline deadline) {
  timeval tv{};  // zero: no timeout
  if (deadline != Deadline::max()) {
    const auto left = std::chrono::duration_cast<std::chrono::microseconds>(deadline - Clock::now());
    OC_EXPECT(left.count() > 0, timeout, "deadline passed on fd {}", fd);
    tv.tv_sec = left.count() / 1'000'000;
    tv.tv_usec = left.count() % 1'000'000;
  }
  if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) != 0 ||
      setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) != 0) {
    return errno_error(errno, "setsockopt(SO_RCVTIMEO/SO_SNDTIMEO)", __FILE__, __LINE__);
  }
  return {};
}

Result<void> TlsSession::handshake_ktls(Deadline deadline) {
  SSL_set_options(ssl_, SSL_OP_ENABLE_KTLS);
  BIO* sock = BIO_new_socket(fd_, BIO_NOCLOSE);
  OC_EXPECT(sock != nullptr, protocol, "TLS: BIO_new_socket: {}", openssl_errors());
  SSL_set_bio(ssl_, sock, sock);
  OC_TRY(set_socket_timeouts(fd_, deadline));
  ERR_clear_error();
  const int rc = SSL_connect(ssl_);
  if (rc != 1) {
    // A blocking socket that reports "would block" hit SO_RCVTIMEO/SO_SNDTIMEO.
    const int err = SSL_get_error(ssl_, rc);
    OC_EXPECT(err != SSL_ERROR_WANT_READ && err != SSL_ERROR_WANT_WRITE, timeout,
              "TLS handshake with {} timed out", peer_);
    return failure("handshake", rc);
  }
  OC_TRY(set_socket_timeouts(fd_, Deadline::max()));
  const bool send = BIO_get_ktls_send(SSL_get_wbio(ssl_)) != 0;
  const bool recv = BIO_get_ktls_recv(SSL_get_rbio(ssl_)) != 0;
  if (send && recv) {
    transport_ = Transport::ktls;
    return {};
  }
  // The kernel did not take the receive side (OpenSSL 3.0 has no TLS 1.3 kTLS receive, or the
  // cipher is not offloadable): receive in userspace through the ring. OpenSSL buffers records in
  // the SSL object, not the BIO, so swapping BIOs after the handshake loses nothing.
  log::get().debug("net: {}: kTLS send {}, receive off; receiving in userspace", peer_, send ? "on" : "off");
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
    const bool typed = c != nullptr && c->cmsg_level == SOL_TLS && c->cmsg_type == TLS_GET_RECORD_TYPE;
    const unsigned char type = typed ? *CMSG_DATA(c) : kApplicationData;
    if (type == kApplicationData) return n;  // includes 0 at end of stream
    const auto first = n > 0 ? std::to_integer<unsigned char>(dest[0]) : 0;
    if (type == kHandshake && first == kNewSessionTicket) continue;  // no resumption: ignore
    if (type == kHandshake && first == kKeyUpdate) {
      disable_ktls();
      return OC_ERROR(Errc::protocol,
                      "kTLS: peer sent a TLS KeyUpdate; the kernel cannot rekey, reconnect with userspace TLS");
    }
    if (type == kAlert && n >= 2 && std::to_integer<unsigned char>(dest[1]) == kCloseNotify) return size_t{0};
    return OC_ERROR(Errc::protocol, "kTLS read from {}: unexpected TLS record type {} ({} bytes)", peer_,
                    type, n);
  }
}

}  // namespace oc::net::detail
