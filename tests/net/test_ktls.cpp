// SPDX-License-Identifier: Apache-2.0
// Runs only where ring_features().ktls (see ktls_main.cpp); test_ktls_fallback.cpp covers the
// machines without kernel TLS. Which directions kTLS took is read from the kernel itself, so a
// connection that quietly stayed in userspace cannot pass for a kTLS one.
#include <arpa/inet.h>
#include <linux/tls.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/crypto.h>
#include <sys/socket.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "net/connection.hpp"
#include "tests/net/tls_fixture.hpp"

using namespace std::chrono_literals;
using namespace oc::net;
using namespace oc::net::test;

namespace {

// Which directions' record keys the kernel holds for one socket.
struct KernelKeys {
  bool send = false;
  bool receive = false;
};

struct Outcome {
  Transport transport = Transport::plain;
  KernelKeys keys;
};

// The descriptor of this process's socket whose peer is 127.0.0.1:@p port, i.e. the client end
// of a connection to an in-process server (the server's end has that port as its own address).
// Connection does not expose its socket, so /proc/self/fd is searched.
int socket_connected_to(uint16_t port) {
  int found = -1;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    const int fd = std::stoi(entry.path().filename().string());
    sockaddr_in peer{};
    socklen_t len = sizeof peer;
    if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &len) != 0 ||
        peer.sin_family != AF_INET || peer.sin_addr.s_addr != htonl(INADDR_LOOPBACK) ||
        ntohs(peer.sin_port) != port) {
      continue;
    }
    INFO("fds " << found << " and " << fd << " are both connected to port " << port);
    REQUIRE(found < 0);
    found = fd;
  }
  INFO("no socket connected to port " << port);
  REQUIRE(found >= 0);
  return found;
}

// getsockopt(SOL_TLS, TLS_TX or TLS_RX) copies the crypto info once the kernel holds that
// direction's keys and fails with EBUSY before; any other error means the question went unasked.
bool kernel_holds_keys(int fd, int direction) {
  tls_crypto_info info{};
  socklen_t len = sizeof info;
  if (getsockopt(fd, SOL_TLS, direction, &info, &len) == 0) return info.cipher_type != 0;
  const int err = errno;
  INFO("getsockopt(SOL_TLS, " << (direction == TLS_TX ? "TLS_TX" : "TLS_RX")
                              << "): " << std::strerror(err));
  REQUIRE(err == EBUSY);
  return false;
}

KernelKeys kernel_keys(int fd) {
  char ulp[16] = {};
  socklen_t len = sizeof ulp - 1;
  REQUIRE(getsockopt(fd, SOL_TCP, TCP_ULP, ulp, &len) == 0);  // empty without a ULP
  if (std::string_view(ulp) != "tls") return {};
  return {kernel_holds_keys(fd, TLS_TX), kernel_holds_keys(fd, TLS_RX)};
}

constexpr std::string_view kRequest = "send the pattern";

// Connects with kTLS allowed to a server pinned to @p version, sends a request (which the server
// must read before it answers), receives a pattern and expects EOF. The kernel's keys are read
// while the connection is open.
Outcome exchange_with_ktls(int version, size_t bytes) {
  TlsServerOptions o{test_pki().server_cert, test_pki().server_key, version, version};
  TlsServer server(o, [bytes](SSL* ssl) {
    std::string got(kRequest.size(), '\0');
    size_t done = 0, n = 0;
    while (done < got.size() && SSL_read_ex(ssl, got.data() + done, got.size() - done, &n) == 1)
      done += n;
    if (got == kRequest) ssl_write_pattern(ssl, bytes);  // else close: the client sees EOF early
  });
  TlsConfig config;
  config.ca_file = test_pki().ca_file;
  auto ctx = TlsContext::create(config);
  REQUIRE(ctx.ok());
  REQUIRE((*ctx)->config().allow_ktls);
  auto conn = Connection::open(ConnectOptions{"127.0.0.1", server.port(), *ctx, Clock::now() + 5s});
  REQUIRE(conn.ok());
  const Outcome out{(*conn)->transport(), kernel_keys(socket_connected_to(server.port()))};

  const iovec request{const_cast<char*>(kRequest.data()), kRequest.size()};
  REQUIRE((*conn)->send_all({&request, 1}, Clock::now() + 5s).ok());
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
  CHECK((*conn)->counters().bytes_received == bytes);
  return out;
}

std::string describe(const Outcome& r) {
  return std::string("transport ") + transport_name(r.transport) + ", kernel keys: send " +
         (r.keys.send ? "yes" : "no") + ", receive " + (r.keys.receive ? "yes" : "no") + "; " +
         OpenSSL_version(OPENSSL_VERSION);
}

}  // namespace

TEST_CASE("kTLS over TLS 1.2 moves data in the kernel both ways", "[net][ktls]") {
  const Outcome r = exchange_with_ktls(TLS1_2_VERSION, 8 << 20);
  INFO(describe(r));
  CHECK(r.keys.send);
  CHECK(r.keys.receive);
  CHECK(r.transport == Transport::ktls);
}

TEST_CASE(
    "kTLS over TLS 1.3 sends in the kernel, and is Transport::ktls only if the kernel also "
    "receives",
    "[net][ktls]") {
  const Outcome r = exchange_with_ktls(TLS1_3_VERSION, 8 << 20);
  INFO(describe(r));
  // OpenSSL offloads TLS 1.3 sending since 3.0: without the send keys, kTLS was never asked for.
  CHECK(r.keys.send);
  // Before 3.2, OpenSSL installs TLS 1.3 keys for sending only (tls13_change_cipher_state skips
  // kTLS for reads), so the connection receives in userspace through the ring.
  if (OpenSSL_version_num() < 0x30200000L) CHECK_FALSE(r.keys.receive);
  // TlsSession's contract: kTLS (with session tickets skipped by recv) only when the kernel holds
  // both directions' keys, userspace TLS otherwise.
  CHECK(r.transport == (r.keys.send && r.keys.receive ? Transport::ktls : Transport::tls));
}
