// SPDX-License-Identifier: Apache-2.0
// Test PKI generated at test time with the OpenSSL C API, and an in-process TLS server.
#pragma once

#include <openssl/ssl.h>

#include <functional>
#include <memory>
#include <string>

#include "tests/net/loopback.hpp"

namespace oc::net::test {

/// PEM files in a temporary directory, created once per process.
struct TestPki {
  std::string ca_file;      ///< the trusted CA
  std::string server_cert;  ///< signed by the CA; SAN localhost, 127.0.0.1
  std::string server_key;
  std::string mismatch_cert;  ///< signed by the CA; SAN other.example only
  std::string mismatch_key;
  std::string unknown_ca_file;  ///< a CA nobody trusts
  std::string untrusted_cert;   ///< signed by the unknown CA; SAN localhost, 127.0.0.1
  std::string untrusted_key;
};
[[nodiscard]] const TestPki& test_pki();

struct TlsServerOptions {
  std::string cert;
  std::string key;
  int min_version = 0;  ///< e.g. TLS1_2_VERSION; 0 = library default
  int max_version = 0;
};

/// Accepts one TCP connection, completes SSL_accept and runs @p serve; then close_notify.
/// A failed handshake just closes the socket (the client side reports it).
class TlsServer {
 public:
  TlsServer(const TlsServerOptions& options, std::function<void(SSL*)> serve);
  ~TlsServer();
  TlsServer(const TlsServer&) = delete;
  TlsServer& operator=(const TlsServer&) = delete;
  [[nodiscard]] uint16_t port() const { return server_.port(); }
  /// The SNI the client sent; read after the server is done (destroyed or joined by the test).
  [[nodiscard]] const std::string& sni() const { return *sni_; }

 private:
  std::shared_ptr<SSL_CTX> ctx_;
  std::shared_ptr<std::string> sni_;
  LoopbackServer server_;
};

/// Writes @p bytes of the pattern with SSL_write in 1 MiB pieces.
void ssl_write_pattern(SSL* ssl, size_t bytes);

}  // namespace oc::net::test
