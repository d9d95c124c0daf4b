// SPDX-License-Identifier: Apache-2.0
// Multi-range GETs: the multipart/byteranges deframer on its own (split at every byte), and
// through the client against servers that answer with parts, with the whole object, or with a
// part that was not asked for.
#include <strings.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cstring>
#include <string>
#include <vector>

#include "config/defaults.hpp"
#include "net/byteranges.hpp"
#include "net/s3_client.hpp"
#include "net/scheduler.hpp"
#include "tests/net/fake_env.hpp"
#include "tests/net/loopback_server.hpp"

using namespace oc;
using namespace std::chrono_literals;
using net::RangeFetch;
using test::LoopbackServer;

namespace {

constexpr uint64_t kObjectBytes = 1 << 20;

char byte_at(uint64_t i) { return static_cast<char>((i * 7 + (i >> 9)) & 0xff); }

std::string multipart_body(const std::vector<std::pair<uint64_t, uint64_t>>& parts,
                           std::string_view boundary = "00000000001") {
  std::string body;
  for (auto [first, last] : parts) {
    body += fmt::format(
        "\r\n--{}\r\nContent-Type: application/octet-stream\r\n"
        "Content-Range: bytes {}-{}/{}\r\n\r\n",
        boundary, first, last, kObjectBytes);
    for (uint64_t i = first; i <= last; ++i) body += byte_at(i);
  }
  body += fmt::format("\r\n--{}--\r\n", boundary);
  return body;
}

struct Slots {
  std::vector<std::vector<std::byte>> memory;
  std::vector<RangeFetch> ranges;
  explicit Slots(const std::vector<std::pair<uint64_t, uint64_t>>& want) {
    memory.reserve(want.size());
    for (auto [first, last] : want) {
      memory.emplace_back(last - first + 1, std::byte{0xEE});
      ranges.push_back({first, memory.back()});
    }
  }
  bool exact() const {
    for (const auto& r : ranges) {
      for (size_t i = 0; i < r.dest.size(); ++i) {
        if (r.dest[i] != static_cast<std::byte>(byte_at(r.offset + i))) return false;
      }
    }
    return true;
  }
  bool untouched(size_t k) const {
    for (std::byte b : ranges[k].dest) {
      if (b != std::byte{0xEE}) return false;
    }
    return true;
  }
};

// Feeds @p body as the spill (its first @p split bytes) and the wire (the rest, @p step at a time).
Result<void> deframe(const std::string& body, size_t split, size_t step, Slots& slots,
                     net::DeframeCounters& c) {
  size_t at = split;
  const net::ReceiveFn wire = [&](std::span<std::byte> into) -> Result<size_t> {
    const size_t n = std::min({into.size(), step, body.size() - at});
    std::memcpy(into.data(), body.data() + at, n);
    at += n;
    return n;
  };
  return net::deframe_byteranges("00000000001", slots.ranges,
                                 std::string_view(body).substr(0, split), body.size(), wire, c);
}

}  // namespace

TEST_CASE("byteranges: header and boundary", "[net][byteranges]") {
  Slots s({{0, 9}, {100, 199}});
  CHECK(net::byte_ranges_header(s.ranges) == "bytes=0-9,100-199");
  CHECK(net::byteranges_boundary("multipart/byteranges; boundary=00000000001") == "00000000001");
  CHECK(net::byteranges_boundary("Multipart/ByteRanges;boundary=\"a b\"") == "a b");
  CHECK(!net::byteranges_boundary("application/octet-stream"));
  CHECK(!net::byteranges_boundary("multipart/byteranges"));
  CHECK(!net::byteranges_boundary("multipart/mixed; boundary=x"));
  CHECK(!net::byteranges_boundary("multipart/byteranges; boundary=" + std::string(71, 'x')));
}

TEST_CASE("byteranges: parts land in their slots, whatever the split of the stream",
          "[net][byteranges]") {
  const std::vector<std::pair<uint64_t, uint64_t>> want{{5, 4100}, {9000, 9000}, {20000, 30000}};
  const std::string body = multipart_body(want);
  for (size_t split :
       {size_t{0}, size_t{1}, size_t{60}, size_t{100}, body.size() / 2, body.size()}) {
    for (size_t step : {size_t{1}, size_t{7}, size_t{4096}, size_t{1} << 20}) {
      if (step == 1 && split > 100) continue;  // byte by byte once is enough
      Slots s(want);
      net::DeframeCounters c;
      INFO("split " << split << " step " << step);
      auto r = deframe(body, split, step, s, c);
      INFO((r.ok() ? std::string("ok") : r.error().to_string()));
      REQUIRE(r.ok());
      CHECK(s.exact());
      CHECK(c.placed == 4096 + 1 + 10001);
      CHECK(c.copied <= c.placed);
    }
  }
  // Parts may come in any order; without the leading CRLF too.
  Slots s(want);
  net::DeframeCounters c;
  std::string reordered = multipart_body({{20000, 30000}, {5, 4100}, {9000, 9000}});
  reordered.erase(0, 2);
  REQUIRE(deframe(reordered, 0, 4096, s, c).ok());
  CHECK(s.exact());
}

TEST_CASE("byteranges: a part not asked for is refused before its bytes land",
          "[net][byteranges]") {
  Slots s({{0, 99}, {1000, 1099}});
  net::DeframeCounters c;
  SECTION("a wrong range") {
    auto r = deframe(multipart_body({{0, 99}, {1000, 1100}}), 0, 4096, s, c);
    REQUIRE(!r.ok());
    CHECK(r.error().code() == Errc::protocol);
    CHECK(r.error().message().find("not asked for") != std::string::npos);
    CHECK(s.untouched(1));
  }
  SECTION("the same range twice") {
    auto r = deframe(multipart_body({{0, 99}, {0, 99}}), 0, 4096, s, c);
    REQUIRE(!r.ok());
    CHECK(s.untouched(1));
  }
  SECTION("a missing range") {
    auto r = deframe(multipart_body({{0, 99}}), 0, 4096, s, c);
    REQUIRE(!r.ok());
    CHECK(r.error().message().find("1 of the 2") != std::string::npos);
  }
  SECTION("a body cut short") {
    const std::string body = multipart_body({{0, 99}, {1000, 1099}});
    const std::string cut = body.substr(0, body.size() - 120);
    size_t at = 0;
    const net::ReceiveFn wire = [&](std::span<std::byte> into) -> Result<size_t> {
      const size_t n = std::min(into.size(), cut.size() - at);
      std::memcpy(into.data(), cut.data() + at, n);
      at += n;
      return n;
    };
    auto r = net::deframe_byteranges("00000000001", s.ranges, {}, body.size(), wire, c);
    REQUIRE(!r.ok());
    CHECK(r.error().code() == Errc::protocol);
  }
  SECTION("garbage instead of a delimiter") {
    auto r = deframe(std::string(200, 'x'), 0, 4096, s, c);
    REQUIRE(!r.ok());
    CHECK(s.untouched(0));
  }
}

namespace {

// GET with "Range: bytes=a-b,c-d,..." answered as @p mode says:
//   parts    multipart/byteranges, as nginx does
//   whole    200 with the whole object for several ranges (as S3 does), 206 for one
//   wrong    multipart whose second part names a range one byte longer than asked
//   refuse   416 for several ranges, 206 for one
struct RangeServer {
  std::string mode;
  std::atomic<int> requests{0};
  LoopbackServer server{[this](int fd) { serve(fd); }};

  void serve(int fd) {
    for (;;) {
      const std::string head = LoopbackServer::read_head(fd);
      if (head.empty()) return;
      ++requests;
      std::vector<std::pair<uint64_t, uint64_t>> ranges;
      const size_t at = head.find("range: bytes=") != std::string::npos
                            ? head.find("range: bytes=")
                            : head.find("Range: bytes=");
      for (size_t p = at + 13; p < head.size() && head[p] != '\r';) {
        uint64_t a = 0, b = 0;
        int used = 0;
        if (std::sscanf(head.c_str() + p, "%lu-%lu%n", &a, &b, &used) != 2) break;
        ranges.emplace_back(a, b);
        p += used;
        if (head[p] == ',') ++p;
      }
      std::string body, type = "multipart/byteranges; boundary=00000000001";
      int status = 206;
      if (mode == "refuse" && ranges.size() > 1) {
        if (!LoopbackServer::write_all(
                fd, "HTTP/1.1 416 Range Not Satisfiable\r\nContent-Length: 0\r\n\r\n"))
          return;
        continue;
      }
      if ((mode == "whole" && ranges.size() > 1) || ranges.empty()) {
        status = 200;
        type = "application/octet-stream";
        for (uint64_t i = 0; i < kObjectBytes; ++i) body += byte_at(i);
      } else if (ranges.size() == 1) {
        for (uint64_t i = ranges[0].first; i <= ranges[0].second; ++i) body += byte_at(i);
        type = fmt::format("application/octet-stream\r\nContent-Range: bytes {}-{}/{}",
                           ranges[0].first, ranges[0].second, kObjectBytes);
      } else {
        if (mode == "wrong") ++ranges[1].second;
        body = multipart_body(ranges);
      }
      const std::string out = fmt::format(
          "HTTP/1.1 {} X\r\nContent-Type: {}\r\nContent-Length: {}\r\nETag: \"e1\"\r\n\r\n", status,
          type, body.size());
      if (!LoopbackServer::write_all(fd, out + body)) return;
    }
  }
};

std::shared_ptr<net::S3Client> url_client(net::Scheduler& scheduler) {
  net::S3ClientConfig config;
  config.scheduler = &scheduler;
  config.timeouts.stall = 2s;
  auto c = net::S3Client::create(std::move(config));
  REQUIRE(c.ok());
  return std::move(c).value();
}

}  // namespace

TEST_CASE("multi-range GETs of a URL: parts, a server that ignores ranges, a wrong part",
          "[net][byteranges]") {
  net::Scheduler scheduler(16, 1, "oc-tmr");
  RangeServer srv;
  auto client = url_client(scheduler);
  net::ObjectRef obj;
  obj.url = fmt::format("http://127.0.0.1:{}/bkt/obj", srv.server.port());
  std::vector<std::pair<uint64_t, uint64_t>> want;
  for (uint64_t i = 0; i < 40; ++i) want.emplace_back(i * 20000 + 3, i * 20000 + 3 + 100 * i);
  Slots s(want);
  SECTION("multipart/byteranges: 40 ranges in 2 GETs") {
    srv.mode = "parts";
    REQUIRE(client->fetch_ranges(obj, "", s.ranges).ok());
    CHECK(s.exact());
    CHECK(srv.requests.load() == 2);  // 32 and 8 ranges (http_multirange_max_parts)
    CHECK(client->counters().multirange_gets.load() == 2);
  }
  SECTION("a server that ignores ranges: refused before a byte lands, then one range a GET") {
    srv.mode = "whole";
    auto r = client->get_url_ranges(obj.url, std::span(s.ranges).first(3));
    REQUIRE(!r.ok());
    CHECK(r.error().code() == Errc::unsupported);
    CHECK(s.untouched(0));
    CHECK(s.untouched(1));
    // fetch_ranges notes the endpoint and falls back to one range a GET: the bytes arrive.
    Slots again(want);
    auto f = client->fetch_ranges(obj, "", again.ranges);
    INFO((f.ok() ? std::string("ok") : f.error().to_string()));
    REQUIRE(f.ok());
    CHECK(again.exact());
    CHECK(client->counters().multirange_gets.load() == 0);
    // Known now: the next fetch goes straight to single-range GETs.
    Slots third(want);
    const int before = srv.requests.load();
    REQUIRE(client->fetch_ranges(obj, "", third.ranges).ok());
    CHECK(third.exact());
    CHECK(srv.requests.load() - before == 40);
  }
  SECTION("a server that refuses multi-range requests with 416: one range a GET") {
    srv.mode = "refuse";
    REQUIRE(client->fetch_ranges(obj, "", s.ranges).ok());
    CHECK(s.exact());
    CHECK(client->counters().multirange_gets.load() == 0);
  }
  SECTION("a part whose Content-Range was not asked for: refused, nothing misplaced") {
    srv.mode = "wrong";
    auto r = client->get_url_ranges(obj.url, std::span(s.ranges).first(3));
    REQUIRE(!r.ok());
    CHECK(r.error().code() == Errc::protocol);
    CHECK(r.error().message().find("not asked for") != std::string::npos);
    CHECK(s.untouched(1));
    CHECK(s.untouched(2));
  }
}

TEST_CASE("multi-range memo: per endpoint, bounded", "[net][byteranges]") {
  net::MultirangeMemo memo(3);
  CHECK_FALSE(memo.known("http://a.example:81/x").has_value());
  memo.note("http://a.example:81/x", true);
  memo.note("http://b.example/y", false);
  CHECK(memo.known("http://a.example:81/other") == std::optional<bool>(true));
  CHECK(memo.known("http://b.example:80/z") == std::optional<bool>(false));
  CHECK_FALSE(memo.known("http://a.example:82/x").has_value());  // another port, another endpoint
  for (int i = 0; i < 1000; ++i) memo.note(fmt::format("http://h{}.example/o", i), i % 2 == 0);
  CHECK(memo.size() <= 3);
  CHECK(memo.known("http://h999.example/o") == std::optional<bool>(false));
  memo.note("http://h999.example/o", true);  // a known endpoint is updated in place
  CHECK(memo.known("http://h999.example/o") == std::optional<bool>(true));
}
