// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief A client byte stream to one endpoint: plain TCP, userspace TLS or kernel TLS.
///
/// The HTTP layer sees only `send_all` and `recv`. Every byte moves through the calling thread's
/// `Ring`. With userspace TLS, ciphertext is received by the ring into OpenSSL's record buffer
/// (a BIO whose read callback is a ring receive) and `SSL_read` decrypts straight into the
/// caller's destination span. With kTLS (when `ring_features().ktls` and OpenSSL install the
/// keys), the ring receives plaintext straight into the destination; non-data records are read
/// with `recvmsg` and their record type. A TLS 1.3 NewSessionTicket is consumed and ignored; a
/// KeyUpdate, which the kernel cannot follow, fails the connection with `Errc::protocol` naming
/// it, and the endpoint falls back to userspace TLS for new connections.
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "config/error.hpp"
#include "net/ring.hpp"

namespace oc::net {

class Resolver;

/// TLS settings. Peer verification (chain and hostname) is on by default.
struct TlsConfig {
  bool verify_peer = true;
  std::string ca_file;  ///< PEM bundle; empty means OpenSSL's default paths
  std::string ca_dir;   ///< hashed CA directory; empty means none
  bool allow_ktls = true;
  /// Reads `AWS_CA_BUNDLE` into `ca_file` when it is set, as the AWS SDKs do.
  [[nodiscard]] static TlsConfig from_env();
};

/// A shareable OpenSSL context (SSL_CTX) built from a `TlsConfig`: TLS 1.2 minimum, 1.3 allowed.
class TlsContext {
 public:
  /// `Errc::invalid` naming the file when a CA file or directory cannot be loaded.
  [[nodiscard]] static Result<std::shared_ptr<TlsContext>> create(const TlsConfig& config);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;
  [[nodiscard]] void* native() const noexcept;  ///< the SSL_CTX*
  [[nodiscard]] const TlsConfig& config() const noexcept;

 private:
  TlsContext() = default;
  struct State;
  std::unique_ptr<State> state_;
};

enum class Transport : uint8_t { plain, tls, ktls };
[[nodiscard]] const char* transport_name(Transport t) noexcept;  ///< "plain", "tls", "ktls"

struct ConnectOptions {
  std::string host;  ///< DNS name or literal address ("[::1]" too); also the SNI and verified name
  uint16_t port = 0;
  std::shared_ptr<TlsContext> tls;  ///< null for plain TCP
  /// For DNS, TCP connect and the TLS handshake together; left default-constructed, it is
  /// now + the `http_connect_timeout_ms` knob.
  Deadline deadline;
  /// Connect only to public addresses (net/address.hpp): a host that resolves to loopback,
  /// link-local or private addresses only is `Errc::denied`. For URLs a client named.
  bool public_only = false;
  /// Resolves `host`; null means `Resolver::global()` (tests inject faults with their own).
  Resolver* resolver = nullptr;
};

struct ConnectionCounters {
  uint64_t bytes_received = 0;  ///< application bytes (plaintext) delivered to callers
  uint64_t bytes_sent = 0;
  uint64_t receive_calls = 0;  ///< ring receives issued for this connection
};

class Connection {
 public:
  /// Resolves, connects and, with `options.tls`, handshakes (SNI + verification).
  /// Errors: `Errc::io` (refused, unreachable; names host:port), `Errc::timeout`,
  /// `Errc::protocol` for a failed handshake or verification, with OpenSSL's reason.
  [[nodiscard]] static Result<std::unique_ptr<Connection>> open(const ConnectOptions& options);

  /// Sends every byte of @p pieces (gathered; no concatenation by the caller).
  [[nodiscard]] Result<void> send_all(std::span<const iovec> pieces, Deadline deadline);
  /// Receives into @p dest; returns 1..dest.size() bytes, or 0 at orderly end of stream.
  [[nodiscard]] Result<size_t> recv(std::span<std::byte> dest, Deadline deadline);

  /// Makes a blocked send or recv in another thread fail soon (shutdown(2)); for hedging.
  void abort() noexcept;

  [[nodiscard]] Transport transport() const noexcept;
  [[nodiscard]] const std::string& peer() const noexcept;  ///< "host:port"
  [[nodiscard]] const ConnectionCounters& counters() const noexcept;

  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

 private:
  Connection();
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace oc::net
