// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>
#include <string>

#include "net/http_response.hpp"

using namespace oc;

namespace {
std::span<const uint8_t> bytes(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}
}  // namespace

TEST_CASE("a Content-Length response parses in any split", "[net][http]") {
  const std::string msg =
      "HTTP/1.1 206 Partial Content\r\nContent-Length: 11\r\nETag: \"abc\"\r\n"
      "Content-Range: bytes 0-10/100\r\n\r\nhello world";
  for (size_t split = 0; split <= msg.size(); ++split) {
    net::ResponseParser p;
    std::string body;
    net::BodySink sink = [&](std::span<const uint8_t> b) {
      body.append(reinterpret_cast<const char*>(b.data()), b.size());
    };
    auto a = p.feed(bytes(msg.substr(0, split)), sink);
    REQUIRE(a.ok());
    if (!p.message_complete()) REQUIRE(p.feed(bytes(msg.substr(split)), sink).ok());
    REQUIRE(p.message_complete());
    CHECK(p.feed(bytes(std::string("x")), sink).error().code() == Errc::invalid);
    CHECK(p.head().status == 206);
    CHECK(p.head().content_length == std::optional<uint64_t>(11));
    CHECK(*p.head().find("etag") == "\"abc\"");
    CHECK(p.head().find("x-missing") == nullptr);
    CHECK(body == "hello world");
  }
}

TEST_CASE("a chunked body is de-framed", "[net][http]") {
  const std::string msg =
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n";
  net::ResponseParser p;
  std::string body;
  auto n = p.feed(bytes(msg), [&](std::span<const uint8_t> b) {
    body.append(reinterpret_cast<const char*>(b.data()), b.size());
  });
  REQUIRE(n.ok());
  CHECK(*n == msg.size());
  CHECK(p.head().chunked);
  CHECK(body == "hello world");
}

TEST_CASE("parsing stops at the end of one message", "[net][http]") {
  const std::string two =
      "HTTP/1.1 204 No Content\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
  net::ResponseParser p;
  auto n = p.feed(bytes(two), {});
  REQUIRE(n.ok());
  CHECK(*n == std::string("HTTP/1.1 204 No Content\r\n\r\n").size());
  CHECK(p.message_complete());
}

TEST_CASE("HEAD responses carry a length but no body", "[net][http]") {
  net::ResponseParser p(/*head_only=*/true);
  auto n = p.feed(bytes("HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n"), {});
  REQUIRE(n.ok());
  CHECK(p.message_complete());
  CHECK(p.head().content_length == std::optional<uint64_t>(1000));
}

TEST_CASE("malformed, oversized and truncated responses are protocol errors", "[net][http]") {
  for (const std::string bad : {"HTTP/1.1 abc OK\r\n\r\n", "NOTHTTP 200\r\n\r\n",
                                "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
                                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"}) {
    INFO(bad);
    net::ResponseParser p;
    auto r = p.feed(bytes(bad), {});
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code() == Errc::protocol);
  }
  net::ResponseParser big;
  const std::string huge = "HTTP/1.1 200 OK\r\nX-Big: " + std::string(100'000, 'a') + "\r\n\r\n";
  auto r = big.feed(bytes(huge), {});
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message().find("exceeds") != std::string::npos);

  net::ResponseParser cut;
  REQUIRE(cut.feed(bytes("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc"), {}).ok());
  auto f = cut.finish();
  REQUIRE_FALSE(f.ok());
  CHECK(f.error().code() == Errc::protocol);
}
