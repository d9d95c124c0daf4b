// SPDX-License-Identifier: Apache-2.0
// Runs only where ring_features().ktls is false (see ktls_fallback_main.cpp); test_ktls.cpp
// covers the machines with kernel TLS.
#include <catch2/catch.hpp>
#include <vector>

#include "net/connection.hpp"
#include "tests/net/tls_fixture.hpp"

using namespace std::chrono_literals;
using namespace oc::net;
using namespace oc::net::test;

TEST_CASE("TLS with allow_ktls falls back to userspace TLS without kernel TLS", "[net][ktls]") {
  REQUIRE_FALSE(ring_features().ktls);
  TlsConfig config;
  config.ca_file = test_pki().ca_file;
  auto ctx = TlsContext::create(config);
  REQUIRE(ctx.ok());
  REQUIRE((*ctx)->config().allow_ktls);
  for (int version : {TLS1_2_VERSION, TLS1_3_VERSION}) {
    INFO("TLS version " << std::hex << version);
    constexpr size_t kBytes = 1 << 20;
    TlsServer server({test_pki().server_cert, test_pki().server_key, version, version},
                     [](SSL* ssl) { ssl_write_pattern(ssl, kBytes); });
    auto conn =
        Connection::open(ConnectOptions{"127.0.0.1", server.port(), *ctx, Clock::now() + 5s});
    REQUIRE(conn.ok());
    CHECK((*conn)->transport() == Transport::tls);
    std::vector<std::byte> dest(kBytes);
    for (size_t done = 0; done < kBytes;) {
      auto n = (*conn)->recv(std::span(dest).subspan(done), Clock::now() + 5s);
      REQUIRE(n.ok());
      REQUIRE(*n > 0);
      done += *n;
    }
    CHECK(first_mismatch(dest, 0) == kBytes);
    std::byte extra[16];
    auto eof = (*conn)->recv(extra, Clock::now() + 5s);
    REQUIRE(eof.ok());
    CHECK(*eof == 0);
    CHECK((*conn)->counters().bytes_received == kBytes);
  }
}
