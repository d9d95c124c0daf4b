// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>
#include <vector>

#include "net/buffer_pool.hpp"
#include "net/connection.hpp"
#include "tests/net/loopback.hpp"

using namespace std::chrono_literals;
using oc::Errc;
using namespace oc::net;
using namespace oc::net::test;

namespace {

std::unique_ptr<Connection> open_plain(const std::string& host, uint16_t port) {
  auto c = Connection::open(ConnectOptions{host, port, nullptr, Clock::now() + 2s});
  REQUIRE(c.ok());
  return std::move(c).value();
}

void send_pattern(int fd, size_t bytes) {
  std::vector<std::byte> chunk(size_t{1} << 20);
  for (size_t off = 0; off < bytes; off += chunk.size()) {
    const size_t n = std::min(chunk.size(), bytes - off);
    fill_pattern({chunk.data(), n}, off);
    if (::send(fd, chunk.data(), n, MSG_NOSIGNAL) != static_cast<ssize_t>(n)) return;
  }
}

}  // namespace

TEST_CASE("plain connection moves 64 MiB into a pool lease, then EOF", "[net]") {
  constexpr size_t kBytes = size_t{64} << 20;
  LoopbackServer server([](int fd) { send_pattern(fd, kBytes); });
  auto conn = open_plain("127.0.0.1", server.port());
  CHECK(conn->transport() == Transport::plain);
  CHECK(conn->peer() == fmt::format("127.0.0.1:{}", server.port()));
  auto lease = BufferPool::global().acquire(kBytes);
  REQUIRE(lease.ok());
  auto dest = lease->bytes();
  for (size_t done = 0; done < kBytes;) {
    auto n = conn->recv(dest.subspan(done), Clock::now() + 5s);
    REQUIRE(n.ok());
    REQUIRE(*n > 0);
    done += *n;
  }
  CHECK(first_mismatch(dest, 0) == kBytes);
  std::byte extra[16];
  auto eof = conn->recv(extra, Clock::now() + 5s);
  REQUIRE(eof.ok());
  CHECK(*eof == 0);
  CHECK(conn->counters().bytes_received == kBytes);
  CHECK(conn->counters().receive_calls >= 2);
}

TEST_CASE("plain connection sends gathered pieces", "[net]") {
  std::string got;
  {
    LoopbackServer server([&got](int fd) {
      char buf[256];
      ssize_t n;
      while ((n = ::recv(fd, buf, sizeof buf, 0)) > 0) got.append(buf, static_cast<size_t>(n));
    });
    // ::1 may come first and be refused; the default deadline is the connect-timeout knob.
    auto opened = Connection::open(ConnectOptions{"localhost", server.port(), nullptr, {}});
    REQUIRE(opened.ok());
    auto& conn = *opened;
    std::string a = "GET / HTTP/1.1\r\n", b = "Host: x\r\n\r\n";
    const iovec pieces[] = {{a.data(), a.size()}, {b.data(), b.size()}};
    REQUIRE(conn->send_all(pieces, Clock::now() + 2s).ok());
    CHECK(conn->counters().bytes_sent == a.size() + b.size());
  }
  CHECK(got == "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
}

TEST_CASE("connection errors: refused, unresolvable, bad options", "[net]") {
  uint16_t port = 0;
  close(listen_loopback(&port));
  auto refused = Connection::open(ConnectOptions{"127.0.0.1", port, nullptr, Clock::now() + 2s});
  REQUIRE(!refused.ok());
  CHECK(refused.error().code() == Errc::io);
  CHECK(refused.error().sys_errno() == ECONNREFUSED);
  CHECK(refused.error().to_string().find(fmt::format("127.0.0.1:{}", port)) != std::string::npos);
  auto unresolvable =
      Connection::open(ConnectOptions{"no-such-host.invalid", 80, nullptr, Clock::now() + 2s});
  REQUIRE(!unresolvable.ok());
  CHECK(unresolvable.error().code() == Errc::io);
  CHECK(Connection::open(ConnectOptions{"", 80, nullptr, Clock::now()}).error().code() ==
        Errc::invalid);
}

TEST_CASE("abort makes a blocked recv in another thread return promptly", "[net]") {
  LoopbackServer server(drain);
  auto conn = open_plain("127.0.0.1", server.port());
  Connection* c = conn.get();
  const auto start = Clock::now();
  std::thread stopper([c] {
    std::this_thread::sleep_for(100ms);
    c->abort();
  });
  std::byte buf[64];
  auto r = conn->recv(buf, Clock::now() + 10s);
  stopper.join();
  CHECK(Clock::now() - start < 2s);
  CHECK((!r.ok() || *r == 0));  // shutdown(2) reads as end of stream
}

TEST_CASE("public_only refuses loopback addresses before connecting", "[net]") {
  LoopbackServer server([](int fd) { send_pattern(fd, 16); });
  for (const char* host : {"127.0.0.1", "localhost"}) {
    INFO(host);
    ConnectOptions o{host, server.port(), nullptr, Clock::now() + 2s, /*public_only=*/true};
    auto c = Connection::open(o);
    REQUIRE_FALSE(c.ok());
    CHECK(c.error().code() == Errc::denied);
    CHECK(c.error().message().find("not a public address") != std::string::npos);
  }
  // The same server is reachable when the caller does not ask for public addresses.
  CHECK(open_plain("127.0.0.1", server.port())->peer().starts_with("127.0.0.1:"));
}
