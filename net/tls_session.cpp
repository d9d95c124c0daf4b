// SPDX-License-Identifier: Apache-2.0
#include <arpa/inet.h>
#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>

#include <string>

#include "net/tls.hpp"

namespace oc::net::detail {
namespace {

bool is_ip_literal(const std::string& host) {
  in6_addr addr{};
  return inet_pton(AF_INET, host.c_str(), &addr) == 1 ||
         inet_pton(AF_INET6, host.c_str(), &addr) == 1;
}

// SNI is only defined for DNS names (RFC 6066 §3); an address is checked against IP SANs.
Result<void> configure_peer(SSL* ssl, const std::string& host, bool verify) {
  const bool ip = is_ip_literal(host);
  OC_EXPECT(ip || SSL_set_tlsext_host_name(ssl, host.c_str()) == 1, invalid,
            "TLS: bad SNI name '{}': {}", host, openssl_errors());
  if (!verify) return {};
  const int ok = ip ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host.c_str())
                    : SSL_set1_host(ssl, host.c_str());
  OC_EXPECT(ok == 1, invalid, "TLS: cannot verify against host '{}': {}", host, openssl_errors());
  return {};
}

// Gathered into one SSL_write: an HTTP head in several small pieces then leaves as one record
// and one send instead of one of each per piece.
constexpr size_t kRecordBytes = SSL3_RT_MAX_PLAIN_LENGTH;

}  // namespace

TlsSession::TlsSession(int fd, const std::string& peer, ConnectionCounters& counters)
    : fd_(fd), peer_(peer), counters_(counters) {}

TlsSession::~TlsSession() { SSL_free(ssl_); }

void TlsSession::close_notify() noexcept {
  if (ssl_ == nullptr || !established_) return;
  // Whatever the BIO (ring or socket), never wait: the alert fits in any socket buffer that is
  // not wedged, and a wedged peer is not worth blocking a destructor for.
  const int flags = fcntl(fd_, F_GETFL);
  if (flags >= 0) fcntl(fd_, F_SETFL, flags | O_NONBLOCK);
  closing_ = true;
  ERR_clear_error();
  SSL_shutdown(ssl_);
  ERR_clear_error();
}

const BIO_METHOD* TlsSession::ring_bio_method() {
  // Created once and kept for the life of the process, as OpenSSL's own methods are.
  static BIO_METHOD* const method = [] {
    BIO_METHOD* m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "onecopy io_uring");
    if (m == nullptr) return m;
    BIO_meth_set_read_ex(m, &TlsSession::bio_read);
    BIO_meth_set_write_ex(m, &TlsSession::bio_write);
    BIO_meth_set_ctrl(m, &TlsSession::bio_ctrl);
    BIO_meth_set_create(m, [](BIO* b) {
      BIO_set_init(b, 1);
      return 1;
    });
    return m;
  }();
  return method;
}

BIO* TlsSession::new_ring_bio() {
  const BIO_METHOD* method = ring_bio_method();
  BIO* bio = method == nullptr ? nullptr : BIO_new(method);
  if (bio != nullptr) BIO_set_data(bio, this);
  return bio;
}

// OpenSSL hands over its record buffer: ciphertext lands there straight from the ring.
int TlsSession::bio_read(BIO* bio, char* buf, size_t len, size_t* got) {
  auto* s = static_cast<TlsSession*>(BIO_get_data(bio));
  BIO_clear_retry_flags(bio);
  auto ring = Ring::this_thread();
  if (!ring.ok()) {
    s->bio_error_ = std::move(ring).error();
    return 0;
  }
  ++s->counters_.receive_calls;
  auto r = (*ring)->recv(s->fd_, {reinterpret_cast<std::byte*>(buf), len}, s->deadline_);
  if (!r.ok()) {
    s->bio_error_ = std::move(r).error();
    return 0;
  }
  *got = *r;
  s->eof_ = *r == 0;
  return *r > 0 ? 1 : 0;
}

int TlsSession::bio_write(BIO* bio, const char* buf, size_t len, size_t* put) {
  auto* s = static_cast<TlsSession*>(BIO_get_data(bio));
  BIO_clear_retry_flags(bio);
  if (s->closing_) {
    const ssize_t n = ::send(s->fd_, buf, len, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n <= 0) return 0;
    *put = static_cast<size_t>(n);
    return 1;
  }
  auto ring = Ring::this_thread();
  if (!ring.ok()) {
    s->bio_error_ = std::move(ring).error();
    return 0;
  }
  const iovec iov{const_cast<char*>(buf), len};
  auto r = (*ring)->send_all(s->fd_, {&iov, 1}, s->deadline_);
  if (!r.ok()) {
    s->bio_error_ = std::move(r).error();
    return 0;
  }
  *put = len;
  return 1;
}

long TlsSession::bio_ctrl(BIO* bio, int cmd, long /*num*/, void* /*ptr*/) {
  switch (cmd) {
    case BIO_CTRL_FLUSH:
      return 1;
    case BIO_CTRL_EOF:  // lets OpenSSL tell a closed peer from a failed read
      return static_cast<TlsSession*>(BIO_get_data(bio))->eof_ ? 1 : 0;
    default:
      return 0;
  }
}

Error TlsSession::failure(const char* what, int ssl_result) {
  if (bio_error_) {
    Error e = std::move(*bio_error_);
    bio_error_.reset();
    return std::move(e).with_context(fmt::format("TLS {} with {}", what, peer_));
  }
  const int err = SSL_get_error(ssl_, ssl_result);
  std::string reason = openssl_errors();
  if (err == SSL_ERROR_SYSCALL && eof_) reason = "peer closed the connection";
  const long verify = SSL_get_verify_result(ssl_);
  if (verify != X509_V_OK) {
    reason +=
        fmt::format("; certificate verification failed: {}", X509_verify_cert_error_string(verify));
  }
  return OC_ERROR(Errc::protocol, "TLS {} with {} failed: {}", what, peer_, reason);
}

Result<std::unique_ptr<TlsSession>> TlsSession::handshake(int fd, const std::string& host,
                                                          const std::string& peer, TlsContext& ctx,
                                                          Deadline deadline,
                                                          ConnectionCounters& counters) {
  std::unique_ptr<TlsSession> s(new TlsSession(fd, peer, counters));
  s->ssl_ = SSL_new(static_cast<SSL_CTX*>(ctx.native()));
  OC_EXPECT(s->ssl_ != nullptr, protocol, "SSL_new: {}", openssl_errors());
  OC_TRY(configure_peer(s->ssl_, host, ctx.config().verify_peer));
  if (ring_features().ktls && ctx.config().allow_ktls && ktls_enabled()) {
    OC_TRY(s->handshake_ktls(deadline));
  } else {
    OC_TRY(s->handshake_userspace(deadline));
  }
  s->established_ = true;
  return s;
}

Result<void> TlsSession::handshake_userspace(Deadline deadline) {
  BIO* bio = new_ring_bio();
  OC_EXPECT(bio != nullptr, protocol, "TLS: cannot create the ring BIO: {}", openssl_errors());
  SSL_set_bio(ssl_, bio, bio);
  deadline_ = deadline;
  ERR_clear_error();
  const int rc = SSL_connect(ssl_);
  if (rc != 1) return failure("handshake", rc);
  return {};
}

Result<void> TlsSession::send_all(std::span<const iovec> pieces, Deadline deadline) {
  if (transport_ == Transport::ktls) {
    OC_ASSIGN_OR_RETURN(Ring * ring, Ring::this_thread());
    return ring->send_all(fd_, pieces, deadline);
  }
  deadline_ = deadline;
  auto write = [this, deadline](const void* p, size_t n) -> Result<void> {
    if (n == 0) return {};
    size_t put = 0;  // without SSL_MODE_ENABLE_PARTIAL_WRITE, success means all n bytes
    if (ktls_send_only_) {
      // The kernel encrypts; OpenSSL writes to the socket BIO, polled through the ring.
      OC_TRY(on_socket_bio("write", deadline, [&] { return SSL_write_ex(ssl_, p, n, &put); }));
      return {};
    }
    ERR_clear_error();
    const int rc = SSL_write_ex(ssl_, p, n, &put);
    if (rc != 1) return failure("write", rc);
    return {};
  };
  std::string staged;
  for (const iovec& piece : pieces) {
    if (staged.size() + piece.iov_len > kRecordBytes) {
      OC_TRY(write(staged.data(), staged.size()));
      staged.clear();
    }
    if (piece.iov_len > kRecordBytes) {
      OC_TRY(write(piece.iov_base, piece.iov_len));
    } else {
      staged.append(static_cast<const char*>(piece.iov_base), piece.iov_len);
    }
  }
  return write(staged.data(), staged.size());
}

Result<size_t> TlsSession::recv(std::span<std::byte> dest, Deadline deadline) {
  if (transport_ == Transport::ktls) return recv_ktls(dest, deadline);
  deadline_ = deadline;
  ERR_clear_error();
  size_t got = 0;
  const int rc = SSL_read_ex(ssl_, dest.data(), dest.size(), &got);
  if (rc == 1) return got;
  const int err = SSL_get_error(ssl_, rc);
  if (!bio_error_ && (err == SSL_ERROR_ZERO_RETURN || (err == SSL_ERROR_SYSCALL && eof_)))
    return size_t{0};
  return failure("read", rc);
}

}  // namespace oc::net::detail
