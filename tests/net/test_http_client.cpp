// SPDX-License-Identifier: Apache-2.0
// The HTTP/1.1 exchange against a scripted loopback server: where body bytes land, how many are
// copied, de-framing in place, 100-continue, keep-alive and the connection pool.
#include <atomic>
#include <catch2/catch.hpp>
#include <cstring>
#include <string>
#include <vector>

#include "net/buffer_pool.hpp"
#include "net/http_client.hpp"
#include "tests/net/loopback_server.hpp"

using namespace oc;
using oc::test::LoopbackServer;

namespace {

std::string pattern(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 2654435761u) >> 13);
  return s;
}

std::unique_ptr<net::Connection> connect_to(uint16_t port) {
  net::ConnectOptions o{"127.0.0.1", port, nullptr, net::Clock::now() + std::chrono::seconds(5)};
  auto c = net::Connection::open(o);
  INFO((c.ok() ? std::string("ok") : c.error().to_string()));
  REQUIRE(c.ok());
  return std::move(c).value();
}

net::HttpTimeouts short_timeouts() {
  using std::chrono::milliseconds;
  return {milliseconds(2000), milliseconds(2000), milliseconds(300)};
}

net::HttpRequest get(std::string_view target) {
  net::HttpRequest r;
  r.method = "GET";
  r.target = target;
  r.host = "127.0.0.1";
  return r;
}

std::string_view view(std::span<std::byte> s) {
  return {reinterpret_cast<const char*>(s.data()), s.size()};
}

}  // namespace

TEST_CASE("a Content-Length body is received into its destination slot", "[net][http]") {
  const std::string body = pattern(8 << 20);
  std::atomic<int> requests{0};
  LoopbackServer server([&](int fd) {
    while (!LoopbackServer::read_head(fd).empty()) {
      ++requests;
      LoopbackServer::write_all(fd, "HTTP/1.1 206 Partial Content\r\nContent-Length: " +
                                        std::to_string(body.size()) + "\r\n\r\n" + body);
    }
  });
  auto conn = connect_to(server.port());
  auto lease = net::BufferPool::global().acquire(body.size());
  REQUIRE(lease.ok());
  for (int round = 0; round < 2; ++round) {  // the second request reuses the connection
    std::memset(lease->data(), 0, lease->size());
    net::ExchangeProgress progress;
    auto r = net::exchange(*conn, get("/obj"), lease->bytes(), short_timeouts(), progress);
    REQUIRE(r.ok());
    CHECK(r->head.status == 206);
    CHECK(r->reusable);
    CHECK(progress.body_bytes == body.size());
    CHECK(view(lease->bytes()) == body);
    // Only what arrived together with the head was copied; the rest was received in place.
    CHECK(progress.copied_bytes < 8192);
    CHECK(progress.first_byte);
  }
  CHECK(requests == 2);
  CHECK(server.accepted() == 1);
}

TEST_CASE("a chunked body is de-framed in place in the destination", "[net][http]") {
  const std::string body = pattern(3 << 20);
  LoopbackServer server([&](int fd) {
    LoopbackServer::read_head(fd);
    std::string msg = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
    for (size_t at = 0; at < body.size();) {
      const size_t n = std::min<size_t>(body.size() - at, 1000 + at % 70000);
      msg += fmt::format("{:x}\r\n", n) + body.substr(at, n) + "\r\n";
      at += n;
    }
    msg += "0\r\n\r\n";
    LoopbackServer::write_all(fd, msg);
  });
  auto conn = connect_to(server.port());
  std::vector<std::byte> dest(body.size());
  net::ExchangeProgress progress;
  auto r = net::exchange(*conn, get("/chunked"), dest, short_timeouts(), progress);
  REQUIRE(r.ok());
  CHECK(progress.body_bytes == body.size());
  CHECK(view(dest) == body);
  // Only the final few KiB (no room left for raw framing in the destination) go through the
  // scratch buffer.
  CHECK(progress.copied_bytes < 64 * 1024);
}

TEST_CASE("error statuses go to text and leave the destination alone", "[net][http]") {
  LoopbackServer server([&](int fd) {
    LoopbackServer::read_head(fd);
    const std::string xml = "<Error><Code>NoSuchKey</Code></Error>";
    LoopbackServer::write_all(fd, "HTTP/1.1 404 Not Found\r\nContent-Length: " +
                                      std::to_string(xml.size()) + "\r\n\r\n" + xml);
  });
  auto conn = connect_to(server.port());
  std::vector<std::byte> dest(16, std::byte{0x5a});
  net::ExchangeProgress progress;
  auto r = net::exchange(*conn, get("/missing"), dest, short_timeouts(), progress);
  REQUIRE(r.ok());
  CHECK(r->head.status == 404);
  CHECK(r->text == "<Error><Code>NoSuchKey</Code></Error>");
  CHECK(progress.body_bytes == 0);
  CHECK(dest[0] == std::byte{0x5a});
}

TEST_CASE("a vetoed head places no body byte", "[net][http]") {
  LoopbackServer server([&](int fd) {
    LoopbackServer::read_head(fd);
    LoopbackServer::write_all(fd,
                              "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 5-9/10\r\n"
                              "Content-Length: 5\r\n\r\nWRONG");
  });
  auto conn = connect_to(server.port());
  std::vector<std::byte> dest(5, std::byte{0});
  net::ExchangeOptions options;
  options.check = [](const net::ResponseHead& h) -> Result<void> {
    OC_EXPECT(*h.find("content-range") == "bytes 0-4/10", protocol, "wrong range");
    return {};
  };
  net::ExchangeProgress progress;
  auto r = net::exchange(*conn, get("/r"), dest, short_timeouts(), progress, options);
  REQUIRE(!r.ok());
  CHECK(r.error().message() == "wrong range");
  CHECK(dest[0] == std::byte{0});
  CHECK(progress.body_bytes == 0);
}

TEST_CASE("bodies that break their framing are errors, with progress kept", "[net][http]") {
  SECTION("larger than the destination") {
    LoopbackServer server([&](int fd) {
      LoopbackServer::read_head(fd);
      LoopbackServer::write_all(fd, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n");
    });
    auto conn = connect_to(server.port());
    std::vector<std::byte> dest(10);
    net::ExchangeProgress progress;
    auto r = net::exchange(*conn, get("/big"), dest, short_timeouts(), progress);
    REQUIRE(!r.ok());
    CHECK(r.error().code() == Errc::protocol);
    CHECK_THAT(r.error().message(), Catch::Contains("exceeds the 10-byte destination"));
  }
  SECTION("truncated by the server") {
    LoopbackServer server([&](int fd) {
      LoopbackServer::read_head(fd);
      LoopbackServer::write_all(
          fd, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n" + std::string(40, 'x'));
    });
    auto conn = connect_to(server.port());
    std::vector<std::byte> dest(100);
    net::ExchangeProgress progress;
    auto r = net::exchange(*conn, get("/short"), dest, short_timeouts(), progress);
    REQUIRE(!r.ok());
    CHECK(r.error().code() == Errc::protocol);
    CHECK(progress.body_bytes == 40);
  }
  SECTION("stalled mid-body") {
    LoopbackServer server([&](int fd) {
      LoopbackServer::read_head(fd);
      LoopbackServer::write_all(fd, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nabc");
      ::usleep(1'500'000);
    });
    auto conn = connect_to(server.port());
    std::vector<std::byte> dest(100);
    net::ExchangeProgress progress;
    const auto t0 = net::Clock::now();
    auto r = net::exchange(*conn, get("/stall"), dest, short_timeouts(), progress);
    REQUIRE(!r.ok());
    CHECK(r.error().code() == Errc::timeout);
    CHECK(net::Clock::now() - t0 < std::chrono::milliseconds(1400));
    CHECK(progress.body_bytes == 3);
  }
}

TEST_CASE("HEAD responses announce a length but carry no body", "[net][http]") {
  LoopbackServer server([&](int fd) {
    LoopbackServer::read_head(fd);
    LoopbackServer::write_all(fd,
                              "HTTP/1.1 200 OK\r\nContent-Length: 12345\r\nETag: \"e\"\r\n\r\n");
    LoopbackServer::read_head(fd);
  });
  auto conn = connect_to(server.port());
  net::HttpRequest req = get("/obj");
  req.method = "HEAD";
  net::ExchangeProgress progress;
  net::ExchangeOptions options;
  options.head_only = true;
  auto r = net::exchange(*conn, req, {}, short_timeouts(), progress, options);
  REQUIRE(r.ok());
  CHECK(r->head.content_length == std::optional<uint64_t>(12345));
  CHECK(r->reusable);
}

TEST_CASE("Expect: 100-continue sends the body only after the go-ahead", "[net][http]") {
  const std::string body = pattern(1 << 20);
  SECTION("100 Continue, then the body, then 200") {
    std::string received;
    {
      LoopbackServer server([&](int fd) {
        const std::string head = LoopbackServer::read_head(fd);
        if (head.find("Expect: 100-continue") == std::string::npos) return;
        LoopbackServer::write_all(fd, "HTTP/1.1 100 Continue\r\n\r\n");
        received = LoopbackServer::read_exact(fd, body.size());
        LoopbackServer::write_all(fd,
                                  "HTTP/1.1 200 OK\r\nETag: \"p1\"\r\nContent-Length: 0\r\n\r\n");
      });
      auto conn = connect_to(server.port());
      net::HttpRequest req = get("/put");
      req.method = "PUT";
      req.body = std::as_bytes(std::span(body.data(), body.size()));
      req.expect_continue = true;
      net::ExchangeProgress progress;
      auto r = net::exchange(*conn, req, {}, short_timeouts(), progress);
      REQUIRE(r.ok());
      CHECK(r->head.status == 200);
      CHECK(*r->head.find("etag") == "\"p1\"");
      conn.reset();
    }  // the server's threads are joined here
    CHECK(received == body);
  }
  SECTION("a final refusal before the body") {
    std::atomic<size_t> extra{0};
    LoopbackServer server([&](int fd) {
      LoopbackServer::read_head(fd);
      LoopbackServer::write_all(fd, "HTTP/1.1 403 Forbidden\r\nContent-Length: 6\r\n\r\ndenied");
      char buf[4096];
      timeval tv{0, 300'000};
      ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
      ssize_t n;
      while ((n = ::recv(fd, buf, sizeof buf, 0)) > 0) extra += static_cast<size_t>(n);
    });
    auto conn = connect_to(server.port());
    net::HttpRequest req = get("/put");
    req.method = "PUT";
    req.body = std::as_bytes(std::span(body.data(), body.size()));
    req.expect_continue = true;
    net::ExchangeProgress progress;
    auto r = net::exchange(*conn, req, {}, short_timeouts(), progress);
    REQUIRE(r.ok());
    CHECK(r->head.status == 403);
    CHECK(r->text == "denied");
    CHECK_FALSE(r->reusable);
    conn.reset();
    CHECK(extra.load() < body.size());
  }
}

TEST_CASE("the pool reuses idle connections and caps open ones", "[net][http]") {
  LoopbackServer server([&](int fd) {
    char c;
    while (::recv(fd, &c, 1, 0) > 0) {
    }
  });
  net::ConnectionPool pool(nullptr, 1);
  const net::EndpointKey key{"127.0.0.1", server.port(), false};
  auto deadline = [] { return net::Clock::now() + std::chrono::milliseconds(200); };
  auto a = pool.acquire(key, deadline());
  REQUIRE(a.ok());
  CHECK_FALSE(a->reused);
  auto blocked = pool.acquire(key, deadline());
  REQUIRE(!blocked.ok());
  CHECK(blocked.error().code() == Errc::timeout);
  net::Connection* first = a->conn.get();
  pool.release(key, std::move(a->conn), true);
  auto b = pool.acquire(key, deadline());
  REQUIRE(b.ok());
  CHECK(b->reused);
  CHECK(b->conn.get() == first);
  pool.release(key, std::move(b->conn), false);
  auto c = pool.acquire(key, deadline());
  REQUIRE(c.ok());
  CHECK_FALSE(c->reused);
  CHECK(pool.connections_opened() == 2);
  pool.release(key, std::move(c->conn), false);
}
