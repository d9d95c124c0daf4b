// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief One TLS session over a connected socket (private to net/; `Connection` owns it).
///
/// Userspace TLS reads ciphertext through a BIO whose callbacks are ring operations, so OpenSSL's
/// record buffer is filled by io_uring directly. The kTLS variant handshakes on a socket BIO and,
/// once the kernel holds both directions' keys, moves plaintext with the ring (see ktls.cpp).
#pragma once

#include <openssl/ssl.h>

#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "config/error.hpp"
#include "net/connection.hpp"

namespace oc::net::detail {

/// @return OpenSSL's queued errors joined by "; " (clears the queue), or "no OpenSSL error".
[[nodiscard]] std::string openssl_errors();

class TlsSession {
 public:
  /// Handshakes on connected @p fd with SNI and verification of @p host per @p ctx's config.
  /// @param counters the owning connection's counters (receive calls are counted here).
  [[nodiscard]] static Result<std::unique_ptr<TlsSession>> handshake(
      int fd, const std::string& host, const std::string& peer, TlsContext& ctx, Deadline deadline,
      ConnectionCounters& counters);

  [[nodiscard]] Result<void> send_all(std::span<const iovec> pieces, Deadline deadline);
  [[nodiscard]] Result<size_t> recv(std::span<std::byte> dest, Deadline deadline);
  [[nodiscard]] Transport transport() const noexcept { return transport_; }

  /// Sends close_notify if the socket takes it right away, never waiting for the peer's.
  void close_notify() noexcept;

  ~TlsSession();
  TlsSession(const TlsSession&) = delete;
  TlsSession& operator=(const TlsSession&) = delete;

 private:
  TlsSession(int fd, const std::string& peer, ConnectionCounters& counters);
  static const BIO_METHOD* ring_bio_method();
  [[nodiscard]] BIO* new_ring_bio();
  [[nodiscard]] Result<void> handshake_userspace(Deadline deadline);
  [[nodiscard]] Result<void> handshake_ktls(Deadline deadline);
  [[nodiscard]] Result<size_t> recv_ktls(std::span<std::byte> dest, Deadline deadline);
  [[nodiscard]] Error failure(const char* what, int ssl_result);
  /// Runs @p call (an SSL_* call returning 1 on success) on the socket BIO, made non-blocking
  /// for it, waiting for readiness with ring polls until @p deadline.
  [[nodiscard]] Result<int> on_socket_bio(const char* what, Deadline deadline,
                                          const std::function<int()>& call);

  static int bio_read(BIO* bio, char* buf, size_t len, size_t* got);
  static int bio_write(BIO* bio, const char* buf, size_t len, size_t* put);
  static long bio_ctrl(BIO* bio, int cmd, long num, void* ptr);

  int fd_;
  const std::string& peer_;
  ConnectionCounters& counters_;
  SSL* ssl_ = nullptr;
  Transport transport_ = Transport::tls;
  bool ktls_send_only_ = false;  ///< kTLS took the send side only; sends block on the socket BIO
  bool established_ = false;
  bool closing_ = false;  ///< the BIO writes without waiting (close_notify on destruction)
  bool eof_ = false;      ///< the peer closed its side (BIO_CTRL_EOF)
  Deadline deadline_{};   ///< of the ring operation in progress, read by the BIO callbacks
  std::optional<Error> bio_error_;  ///< why a BIO callback failed, surfaced instead of OpenSSL's
};

/// @return false once a peer sent a KeyUpdate on a kTLS connection; new connections then use
///         userspace TLS.
[[nodiscard]] bool ktls_enabled() noexcept;
void disable_ktls() noexcept;

}  // namespace oc::net::detail
