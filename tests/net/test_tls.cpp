// SPDX-License-Identifier: Apache-2.0
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <optional>

#include "net/buffer_pool.hpp"
#include "net/connection.hpp"
#include "tests/net/tls_fixture.hpp"

using namespace std::chrono_literals;
using oc::Errc;
using namespace oc::net;
using namespace oc::net::test;

namespace {

std::shared_ptr<TlsContext> context(TlsConfig config) {
  config.allow_ktls = false;
  auto ctx = TlsContext::create(config);
  REQUIRE(ctx.ok());
  return *ctx;
}

std::shared_ptr<TlsContext> trusting_test_ca() {
  TlsConfig config;
  config.ca_file = test_pki().ca_file;
  return context(config);
}

TlsServerOptions good_server() { return {test_pki().server_cert, test_pki().server_key}; }

oc::Result<std::unique_ptr<Connection>> open_tls(const std::string& host, uint16_t port,
                                                 std::shared_ptr<TlsContext> ctx,
                                                 std::chrono::milliseconds timeout = 5000ms) {
  return Connection::open(ConnectOptions{host, port, std::move(ctx), Clock::now() + timeout});
}

// Receives @p bytes and checks them against the pattern, then expects end of stream.
void expect_pattern(Connection& conn, std::span<std::byte> dest) {
  for (size_t done = 0; done < dest.size();) {
    auto n = conn.recv(dest.subspan(done), Clock::now() + 5s);
    REQUIRE(n.ok());
    REQUIRE(*n > 0);
    done += *n;
  }
  CHECK(first_mismatch(dest, 0) == dest.size());
  std::byte extra[16];
  auto eof = conn.recv(extra, Clock::now() + 5s);
  REQUIRE(eof.ok());
  CHECK(*eof == 0);
}

void transfer(const TlsServerOptions& server_options, const std::string& host, size_t bytes,
              std::shared_ptr<TlsContext> ctx, Transport expected = Transport::tls) {
  TlsServer server(server_options, [bytes](SSL* ssl) { ssl_write_pattern(ssl, bytes); });
  auto conn = open_tls(host, server.port(), std::move(ctx));
  REQUIRE(conn.ok());
  CHECK((*conn)->transport() == expected);
  std::vector<std::byte> dest(bytes);
  expect_pattern(**conn, dest);
  CHECK((*conn)->counters().bytes_received == bytes);
}

}  // namespace

TEST_CASE("TLS with the CA file: 64 MiB into a pool lease", "[net]") {
  constexpr size_t kBytes = size_t{64} << 20;
  TlsServer server(good_server(), [](SSL* ssl) { ssl_write_pattern(ssl, kBytes); });
  auto conn = open_tls("127.0.0.1", server.port(), trusting_test_ca());
  REQUIRE(conn.ok());
  CHECK((*conn)->transport() == Transport::tls);
  auto lease = BufferPool::global().acquire(kBytes);
  REQUIRE(lease.ok());
  expect_pattern(**conn, lease->bytes());
  // Read-ahead: one ring receive carries several 16 KiB records.
  CHECK((*conn)->counters().receive_calls < kBytes / (16 << 10));
}

TEST_CASE("TLS sends SNI for a DNS name and not for an address", "[net]") {
  for (const std::string host : {"localhost", "127.0.0.1"}) {
    TlsServer server(good_server(), [](SSL* ssl) { ssl_write_pattern(ssl, 1000); });
    auto conn = open_tls(host, server.port(), trusting_test_ca());
    REQUIRE(conn.ok());
    std::vector<std::byte> dest(1000);
    expect_pattern(**conn, dest);  // the server records SNI before it writes
    CHECK(server.sni() == (host == "localhost" ? host : ""));
  }
}

TEST_CASE("TLS 1.2-only and 1.3-only servers both work", "[net]") {
  for (int version : {TLS1_2_VERSION, TLS1_3_VERSION}) {
    TlsServerOptions o = good_server();
    o.min_version = o.max_version = version;
    transfer(o, "127.0.0.1", 1 << 20, trusting_test_ca());
  }
}

TEST_CASE("TLS send_all reaches the server and the reply comes back", "[net]") {
  TlsServer server(good_server(), [](SSL* ssl) {
    char buf[64];
    size_t n = 0;
    std::string got;
    while (got.size() < 30 && SSL_read_ex(ssl, buf, sizeof buf, &n) == 1) got.append(buf, n);
    std::reverse(got.begin(), got.end());
    SSL_write_ex(ssl, got.data(), got.size(), &n);
  });
  auto conn = open_tls("127.0.0.1", server.port(), trusting_test_ca());
  REQUIRE(conn.ok());
  std::string a = "0123456789", b = "abcdefghij", c = "ABCDEFGHIJ";
  const iovec pieces[] = {{a.data(), a.size()}, {b.data(), b.size()}, {c.data(), c.size()}};
  REQUIRE((*conn)->send_all(pieces, Clock::now() + 2s).ok());
  std::string reply(30, '\0');
  for (size_t done = 0; done < reply.size();) {
    auto n =
        (*conn)->recv(std::as_writable_bytes(std::span(reply)).subspan(done), Clock::now() + 2s);
    REQUIRE(n.ok());
    REQUIRE(*n > 0);
    done += *n;
  }
  CHECK(reply == "JIHGFEDCBAjihgfedcba9876543210");
}

TEST_CASE("TLS rejects an unknown CA, and verify_peer=false accepts it", "[net]") {
  const TlsServerOptions untrusted{test_pki().untrusted_cert, test_pki().untrusted_key};
  {
    TlsServer server(untrusted, [](SSL*) {});
    auto conn = open_tls("127.0.0.1", server.port(), trusting_test_ca());
    REQUIRE(!conn.ok());
    CHECK(conn.error().code() == Errc::protocol);
    CHECK_THAT(conn.error().message(), Catch::Contains("verif"));
    CHECK_THAT(conn.error().message(), Catch::Contains("local issuer"));
  }
  TlsConfig lax;
  lax.verify_peer = false;
  transfer(untrusted, "127.0.0.1", 4096, context(lax));
}

TEST_CASE("TLS rejects a certificate for another name", "[net]") {
  TlsServer server({test_pki().mismatch_cert, test_pki().mismatch_key}, [](SSL*) {});
  auto conn = open_tls("127.0.0.1", server.port(), trusting_test_ca());
  REQUIRE(!conn.ok());
  CHECK(conn.error().code() == Errc::protocol);
  CHECK_THAT(conn.error().message(), Catch::Contains("mismatch"));
}

TEST_CASE("TlsConfig::from_env honours AWS_CA_BUNDLE", "[net]") {
  const char* old = std::getenv("AWS_CA_BUNDLE");
  const std::optional<std::string> saved = old ? std::optional<std::string>(old) : std::nullopt;
  setenv("AWS_CA_BUNDLE", test_pki().ca_file.c_str(), 1);
  const TlsConfig config = TlsConfig::from_env();
  if (saved) {
    setenv("AWS_CA_BUNDLE", saved->c_str(), 1);
  } else {
    unsetenv("AWS_CA_BUNDLE");
  }
  CHECK(config.ca_file == test_pki().ca_file);
  CHECK(config.verify_peer);
  transfer(good_server(), "127.0.0.1", 4096, context(config));
}

TEST_CASE("TLS configuration errors are Errc::invalid", "[net]") {
  TlsConfig bad_file;
  bad_file.ca_file = "/nonexistent/ca.pem";
  auto a = TlsContext::create(bad_file);
  REQUIRE(!a.ok());
  CHECK(a.error().code() == Errc::invalid);
  CHECK_THAT(a.error().message(), Catch::Contains("/nonexistent/ca.pem"));
  TlsConfig bad_dir;
  bad_dir.ca_dir = "/nonexistent/certs";
  CHECK(TlsContext::create(bad_dir).error().code() == Errc::invalid);
}

TEST_CASE("TLS handshake against a silent server times out", "[net]") {
  LoopbackServer server(drain);
  const auto start = Clock::now();
  auto conn = open_tls("127.0.0.1", server.port(), trusting_test_ca(), 300ms);
  REQUIRE(!conn.ok());
  CHECK(conn.error().code() == Errc::timeout);
  CHECK(Clock::now() - start < 2s);
}
