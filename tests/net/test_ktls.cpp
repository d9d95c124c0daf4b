// SPDX-License-Identifier: Apache-2.0
// Runs only where ring_features().ktls (see ktls_main.cpp).
#include <catch2/catch.hpp>

#include <vector>

#include "net/connection.hpp"
#include "tests/net/tls_fixture.hpp"

using namespace std::chrono_literals;
using namespace oc::net;
using namespace oc::net::test;

namespace {

// Connects with kTLS allowed to a server pinned to @p version, receives a pattern, expects EOF.
Transport receive_with_ktls(int version, size_t bytes) {
  TlsServerOptions o{test_pki().server_cert, test_pki().server_key, version, version};
  TlsServer server(o, [bytes](SSL* ssl) { ssl_write_pattern(ssl, bytes); });
  TlsConfig config;
  config.ca_file = test_pki().ca_file;
  auto ctx = TlsContext::create(config);
  REQUIRE(ctx.ok());
  auto conn = Connection::open(ConnectOptions{"127.0.0.1", server.port(), *ctx, Clock::now() + 5s});
  REQUIRE(conn.ok());
  std::vector<std::byte> dest(bytes);
  for (size_t done = 0; done < bytes;) {
    auto n = (*conn)->recv(std::span(dest).subspan(done), Clock::now() + 5s);
    REQUIRE(n.ok());
    REQUIRE(*n > 0);
    done += *n;
  }
  CHECK(first_mismatch(dest, 0) == bytes);
  std::byte extra[16];
  auto eof = (*conn)->recv(extra, Clock::now() + 5s);  // close_notify arrives as an alert record
  REQUIRE(eof.ok());
  CHECK(*eof == 0);
  return (*conn)->transport();
}

}  // namespace

TEST_CASE("kTLS over TLS 1.2 moves data in the kernel", "[net][ktls]") {
  const Transport t = receive_with_ktls(TLS1_2_VERSION, 8 << 20);
  INFO("transport " << transport_name(t));
  CHECK(t == Transport::ktls);
}

TEST_CASE("kTLS over TLS 1.3 skips session tickets (or receives in userspace)", "[net][ktls]") {
  const Transport t = receive_with_ktls(TLS1_3_VERSION, 8 << 20);
  CHECK(t != Transport::plain);
}
