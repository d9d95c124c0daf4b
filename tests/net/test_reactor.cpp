// SPDX-License-Identifier: Apache-2.0
// The reactors: hundreds of requests in flight on two threads, faults on some while the rest
// complete, backoff that holds no thread, DNS lookups bounded by the deadline, IPv6 literals,
// and credentials refreshed once for many waiting requests.
#include <dirent.h>
#include <netinet/in.h>
#include <strings.h>
#include <sys/socket.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <condition_variable>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "config/defaults.hpp"
#include "net/connection.hpp"
#include "net/credentials.hpp"
#include "net/http_client.hpp"
#include "net/reactor.hpp"
#include "net/resolver.hpp"
#include "net/s3_client.hpp"
#include "net/scheduler.hpp"
#include "tests/net/fake_env.hpp"
#include "tests/net/loopback_server.hpp"

using namespace oc;
using namespace std::chrono_literals;
using net::Clock;
using test::LoopbackServer;

namespace {

constexpr uint64_t kObjectBytes = uint64_t{1} << 30;

std::byte pattern(uint64_t i) { return static_cast<std::byte>((i * 131 + (i >> 13) + 7) & 0xff); }

// GET /bkt/<key> with "Range: bytes=a-b" answers 206 with pattern bytes a..b of a 1 GiB object.
// The key's first word picks a fault for the first attempts at that key:
//   reset  the connection is reset instead of answered, once
//   stall  half the body, then nothing for 1.5 s, once
//   busy   503 SlowDown twice, busy1 once
//   hold   waits until `barrier` requests are held at once (or 20 s), then answers
class ObjectServer {
 public:
  explicit ObjectServer(int barrier = 0, bool ipv6 = false)
      : barrier_(barrier), server_([this](int fd) { serve(fd); }, ipv6) {}

  uint16_t port() const { return server_.port(); }
  int peak_held() {
    std::lock_guard lock(mu_);
    return peak_;
  }
  int answered(std::string_view kind) {
    std::lock_guard lock(mu_);
    return faults_[std::string(kind)];
  }
  int retried() {
    std::lock_guard lock(mu_);
    return second_attempts_;
  }

 private:
  void serve(int fd) {
    for (;;) {
      const std::string head = LoopbackServer::read_head(fd);
      if (head.empty()) return;
      const size_t path = head.find(" /bkt/");
      const size_t end = head.find(' ', path + 6);
      const std::string key = head.substr(path + 6, end - path - 6);
      uint64_t first = 0, last = 0;
      const size_t r = find_header(head, "range: bytes=");
      if (r == std::string::npos || std::sscanf(head.c_str() + r, "%lu-%lu", &first, &last) != 2 ||
          last < first) {
        LoopbackServer::write_all(fd, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
        continue;
      }
      const std::string kind = key.substr(0, key.find('-'));
      int attempt = 0;
      {
        std::lock_guard lock(mu_);
        attempt = ++attempts_[key];
        if (attempt == 2) ++second_attempts_;
      }
      if (kind == "reset" && attempt == 1) {
        note("reset");
        const linger hard{1, 0};
        ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
        return;
      }
      if ((kind == "busy" && attempt <= 2) || (kind == "busy1" && attempt == 1)) {
        note(kind);
        const std::string body = "<Error><Code>SlowDown</Code></Error>";
        LoopbackServer::write_all(
            fd, fmt::format("HTTP/1.1 503 Slow Down\r\nContent-Length: {}\r\n\r\n{}", body.size(),
                            body));
        continue;
      }
      if (kind == "hold") hold();
      const uint64_t n = last - first + 1;
      std::string out = fmt::format(
          "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes {}-{}/{}\r\nContent-Length: {}\r\n"
          "ETag: \"v1\"\r\n\r\n",
          first, last, kObjectBytes, n);
      const size_t body_at = out.size();
      out.resize(body_at + n);
      for (uint64_t i = 0; i < n; ++i) out[body_at + i] = static_cast<char>(pattern(first + i));
      if (kind == "stall" && attempt == 1) {
        note("stall");
        LoopbackServer::write_all(fd, std::string_view(out).substr(0, body_at + n / 2));
        std::this_thread::sleep_for(1500ms);
        return;
      }
      if (!LoopbackServer::write_all(fd, out)) return;
    }
  }

  static size_t find_header(const std::string& head, std::string_view name) {
    for (size_t at = 0; (at = head.find("\r\n", at)) != std::string::npos; at += 2) {
      if (strncasecmp(head.c_str() + at + 2, name.data(), name.size()) == 0) {
        return at + 2 + name.size();
      }
    }
    return std::string::npos;
  }

  void note(const std::string& kind) {
    std::lock_guard lock(mu_);
    ++faults_[kind];
  }

  void hold() {
    std::unique_lock lock(mu_);
    ++held_;
    peak_ = std::max(peak_, held_);
    cv_.notify_all();
    cv_.wait_for(lock, 20s, [&] { return peak_ >= barrier_; });
    --held_;
  }

  int barrier_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, int> attempts_, faults_;
  int held_ = 0, peak_ = 0, second_attempts_ = 0;
  LoopbackServer server_;
};

std::shared_ptr<net::S3Client> client_for(const std::string& endpoint, net::Scheduler& scheduler,
                                          uint32_t connections = 512) {
  net::S3Options options;
  options.endpoint_url = endpoint;
  options.region = "us-east-1";
  options.addressing = net::Addressing::path;
  auto ep = net::resolve_endpoint(options, test::env_of({}), net::SharedConfig{});
  REQUIRE(ep.ok());
  net::S3ClientConfig config;
  config.endpoint = std::move(ep).value();
  config.credentials = nullptr;  // unsigned requests: the test server checks no signatures
  config.scheduler = &scheduler;
  config.connections_per_endpoint = connections;
  config.timeouts.connect = 5s;
  config.timeouts.first_byte = 5s;
  config.timeouts.stall = 300ms;
  auto c = net::S3Client::create(std::move(config));
  REQUIRE(c.ok());
  return std::move(c).value();
}

uint64_t first_wrong_byte(std::span<const std::byte> got, uint64_t offset) {
  for (uint64_t i = 0; i < got.size(); ++i) {
    if (got[i] != pattern(offset + i)) return i;
  }
  return got.size();
}

// Threads of this process whose name starts with @p prefix.
int threads_named(std::string_view prefix) {
  int n = 0;
  DIR* dir = ::opendir("/proc/self/task");
  REQUIRE(dir != nullptr);
  while (dirent* e = ::readdir(dir)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream comm(fmt::format("/proc/self/task/{}/comm", e->d_name));
    std::string name;
    std::getline(comm, name);
    if (name.starts_with(prefix)) ++n;
  }
  ::closedir(dir);
  return n;
}

}  // namespace

TEST_CASE("256 GETs in flight on 2 reactor threads, every byte verified", "[net][reactor]") {
  constexpr int kRequests = 256;
  constexpr uint64_t kRange = 256 << 10;
  ObjectServer server(kRequests);
  net::Scheduler scheduler(kRequests, 2, "oc-t256");
  auto client = client_for(fmt::format("http://127.0.0.1:{}", server.port()), scheduler);
  std::vector<std::byte> dest(kRequests * kRange);
  std::vector<net::RangeFetch> ranges;
  for (int i = 0; i < kRequests; ++i) {
    // Spread over the object, out of order.
    const uint64_t offset = (static_cast<uint64_t>(i) * 2654435761u % 4096) * kRange;
    ranges.push_back({offset, std::span(dest).subspan(i * kRange, kRange)});
  }
  net::ObjectRef obj;
  obj.bucket = "bkt";
  obj.key = "hold-all";
  REQUIRE(client->fetch_ranges(obj, "", ranges).ok());
  // The server held every request until all 256 were waiting at once: they were in flight
  // together, on two threads.
  CHECK(server.peak_held() == kRequests);
  CHECK(scheduler.peak_in_flight() == kRequests);
  CHECK(scheduler.threads() == 2);
  CHECK(threads_named("oc-t256") == 2);
  for (const auto& r : ranges) {
    INFO("range at " << r.offset);
    CHECK(first_wrong_byte(r.dest, r.offset) == r.dest.size());
  }
  CHECK(client->counters().retries.load() == 0);
}

TEST_CASE("resets, stalls and 503 bursts on some requests while the rest complete",
          "[net][reactor]") {
  constexpr int kRequests = 128;
  constexpr uint64_t kRange = 64 << 10;
  ObjectServer server;
  net::Scheduler scheduler(64, 2, "oc-tflt");
  auto client = client_for(fmt::format("http://127.0.0.1:{}", server.port()), scheduler);
  std::vector<std::byte> dest(kRequests * kRange);
  std::vector<std::string> keys(kRequests);
  const char* kinds[] = {"reset", "stall", "busy", "ok", "ok", "ok", "ok", "ok"};
  std::atomic<int> failed{0};
  {
    net::TaskGroup group(scheduler);
    for (int i = 0; i < kRequests; ++i) {
      keys[i] = fmt::format("{}-{}", kinds[i % 8], i);
      group.run([&, i]() -> Result<void> {
        auto r = client->get_range("bkt", keys[i], i * kRange,
                                   std::span(dest).subspan(i * kRange, kRange));
        if (!r.ok()) {
          ++failed;
          return std::move(r).error();
        }
        return {};
      });
    }
    auto all = group.wait();
    INFO((all.ok() ? std::string("ok") : all.error().to_string()));
    CHECK(all.ok());
  }
  CHECK(failed.load() == 0);
  CHECK(server.answered("reset") == kRequests / 8);
  CHECK(server.answered("stall") == kRequests / 8);
  CHECK(server.answered("busy") == 2 * kRequests / 8);
  // One more attempt per reset and stall, two per 503 burst (a reset on a reused connection is
  // retried at once, without counting as a retry).
  CHECK(client->counters().attempts.load() == kRequests + 4 * kRequests / 8);
  for (int i = 0; i < kRequests; ++i) {
    INFO("request " << keys[i]);
    CHECK(first_wrong_byte(std::span(dest).subspan(i * kRange, kRange), i * kRange) == kRange);
  }
  CHECK(threads_named("oc-tflt") == 2);
}

TEST_CASE("requests waiting out their backoff hold no thread", "[net][reactor]") {
  // Long backoffs, so that most of the requests are still waiting when the threads are counted.
  const Defaults saved = defaults();
  Defaults slow = saved;
  slow.s3_backoff_base_ms = 500;
  set_defaults(slow);
  constexpr int kRequests = 64;
  constexpr uint64_t kRange = 4096;
  ObjectServer server;
  net::Scheduler scheduler(kRequests, 2, "oc-tbko");
  auto client = client_for(fmt::format("http://127.0.0.1:{}", server.port()), scheduler);
  std::vector<std::byte> dest(kRequests * kRange);
  std::vector<std::string> keys(kRequests);
  net::TaskGroup group(scheduler);
  for (int i = 0; i < kRequests; ++i) {
    keys[i] = fmt::format("busy1-{}", i);
    group.run([&, i]() -> Result<void> {
      OC_TRY(client->get_range("bkt", keys[i], i * kRange,
                               std::span(dest).subspan(i * kRange, kRange)));
      return {};
    });
  }
  const auto until = Clock::now() + 10s;
  while (server.answered("busy1") < kRequests && Clock::now() < until)
    std::this_thread::sleep_for(1ms);
  REQUIRE(server.answered("busy1") == kRequests);
  // Every request has had its 503; each waits 0..1 s before its retry. With most of them
  // waiting, the process still has two reactor threads, and none per request.
  // Read in this order: a request that finished before in_flight() was read had retried
  // before retried() was read, so in_flight >= waiting.
  const uint32_t in_flight = scheduler.in_flight();
  const int waiting = kRequests - server.retried();
  const int threads = threads_named("oc-tbko");
  INFO("requests waiting out a backoff: " << waiting);
  CHECK(waiting >= kRequests / 2);
  CHECK(threads == 2);
  CHECK(in_flight >= static_cast<uint32_t>(waiting));
  REQUIRE(group.wait().ok());
  set_defaults(saved);
  CHECK(server.retried() == kRequests);
  for (int i = 0; i < kRequests; ++i) {
    CHECK(first_wrong_byte(std::span(dest).subspan(i * kRange, kRange), i * kRange) == kRange);
  }
}

TEST_CASE("a host name that never resolves times out at the deadline", "[net][reactor][dns]") {
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  // Fault injection: a lookup that hangs, as getaddrinfo does with an unreachable DNS server.
  net::Resolver resolver(1, 30s,
                         [&](const std::string& host) -> Result<std::vector<net::ResolvedAddress>> {
                           std::unique_lock lock(mu);
                           cv.wait(lock, [&] { return release; });
                           return OC_ERROR(Errc::io, "cannot resolve {}", host);
                         });
  net::Scheduler scheduler(4, 1, "oc-tdns");
  auto open_hanging = [&] {
    net::ConnectOptions o{"never.example", 80, nullptr, Clock::now() + 300ms};
    o.resolver = &resolver;
    const auto t0 = Clock::now();
    auto c = net::Connection::open(o);
    return std::make_pair(std::move(c), Clock::now() - t0);
  };
  SECTION("on a reactor's fiber") {
    auto [c, took] = scheduler.call([&] { return open_hanging(); });
    REQUIRE(!c.ok());
    CHECK(c.error().code() == Errc::timeout);
    CHECK(took < 3s);
  }
  SECTION("on a plain thread") {
    auto [c, took] = open_hanging();
    REQUIRE(!c.ok());
    CHECK(c.error().code() == Errc::timeout);
    CHECK(took < 3s);
  }
  {
    std::lock_guard lock(mu);
    release = true;
  }
  cv.notify_all();
}

TEST_CASE("one lookup per name in flight, answers reused for the TTL", "[net][reactor][dns]") {
  std::atomic<int> calls{0};
  auto lookup = [&](const std::string&) -> Result<std::vector<net::ResolvedAddress>> {
    ++calls;
    std::this_thread::sleep_for(50ms);
    auto a = net::Resolver(1, 0ms).resolve("127.0.0.1", 0, Clock::now() + 1s);
    return a;
  };
  net::Scheduler scheduler(32, 2, "oc-tres");
  SECTION("cached") {
    net::Resolver resolver(2, 60s, lookup);
    net::TaskGroup group(scheduler);
    for (int i = 0; i < 32; ++i) {
      group.run([&]() -> Result<void> {
        OC_ASSIGN_OR_RETURN(auto a, resolver.resolve("db.example", 8080, Clock::now() + 5s));
        OC_EXPECT(a.size() == 1 && a[0].storage.ss_family == AF_INET &&
                      ntohs(reinterpret_cast<const sockaddr_in*>(&a[0].storage)->sin_port) == 8080,
                  io, "wrong address");
        return {};
      });
    }
    REQUIRE(group.wait().ok());
    CHECK(calls.load() == 1);
    CHECK(resolver.lookups() == 1);
    REQUIRE(resolver.resolve("db.example", 1, Clock::now() + 5s).ok());
    CHECK(calls.load() == 1);
  }
  SECTION("TTL 0 looks up again") {
    net::Resolver resolver(2, 0ms, lookup);
    REQUIRE(resolver.resolve("db.example", 1, Clock::now() + 5s).ok());
    REQUIRE(resolver.resolve("db.example", 1, Clock::now() + 5s).ok());
    CHECK(calls.load() == 2);
  }
}

TEST_CASE("the DNS cache holds a bounded number of names, the freshest kept",
          "[net][reactor][dns]") {
  std::atomic<int> calls{0};
  auto lookup = [&](const std::string&) -> Result<std::vector<net::ResolvedAddress>> {
    ++calls;
    return net::Resolver(1, 0ms).resolve("127.0.0.1", 0, Clock::now() + 1s);
  };
  net::Resolver resolver(1, 60s, lookup, 8);
  for (int i = 0; i < 100; ++i) {
    REQUIRE(resolver.resolve(fmt::format("h{}.example", i), 80, Clock::now() + 5s).ok());
    CHECK(resolver.cached_hosts() <= 8);
  }
  CHECK(calls.load() == 100);
  REQUIRE(resolver.resolve("h99.example", 80, Clock::now() + 5s).ok());  // the newest stays
  CHECK(calls.load() == 100);
  REQUIRE(resolver.resolve("h0.example", 80, Clock::now() + 5s).ok());  // the oldest went
  CHECK(calls.load() == 101);
}

TEST_CASE("IPv6 literal endpoints: connect, Host header and ranged GETs", "[net][reactor]") {
  ObjectServer server(0, /*ipv6=*/true);
  net::Scheduler scheduler(8, 1, "oc-tv6");
  auto client = client_for(fmt::format("http://[::1]:{}", server.port()), scheduler);
  std::vector<std::byte> dest(100000);
  auto r = client->get_range("bkt", "ok-v6", 12345, dest);
  INFO((r.ok() ? std::string("ok") : r.error().to_string()));
  REQUIRE(r.ok());
  CHECK(first_wrong_byte(dest, 12345) == dest.size());
}

TEST_CASE("credentials refresh once while many requests wait", "[net][reactor][credentials]") {
  // One reactor thread: a refresh that held a lock across its fetch would stall every other
  // fiber on that thread, and this test with it.
  net::Scheduler scheduler(32, 1, "oc-tcrd");
  std::atomic<int> fetches{0};
  std::string expiration = "2026-11-29T12:00:00Z";
  auto now = std::chrono::system_clock::time_point{};
  std::mutex clock_mu;
  net::HttpFetch fetch = [&](const net::FetchRequest& r) -> Result<net::FetchResponse> {
    ++fetches;
    net::sleep_until(Clock::now() + 100ms);  // a slow metadata service
    if (r.method == "PUT") return net::FetchResponse{200, "TOKEN"};
    if (r.url.ends_with("/security-credentials/")) return net::FetchResponse{200, "role\n"};
    return net::FetchResponse{
        200, fmt::format(R"({{"Code":"Success","AccessKeyId":"ASIA{}","SecretAccessKey":"s",)"
                         R"("Token":"t","Expiration":"{}"}})",
                         fetches.load(), expiration)};
  };
  net::CredentialsProvider provider({}, test::env_of({{"HOME", "/nonexistent-oc-home"}}), fetch,
                                    [&] {
                                      std::lock_guard lock(clock_mu);
                                      return now;
                                    });
  now = *net::parse_iso8601("2026-11-29T11:00:00Z");
  auto run_all = [&](std::vector<std::string>& keys) {
    std::mutex mu;
    net::TaskGroup group(scheduler);
    for (int i = 0; i < 32; ++i) {
      group.run([&]() -> Result<void> {
        OC_ASSIGN_OR_RETURN(auto c, provider.get());
        std::lock_guard lock(mu);
        keys.push_back(c.credentials.access_key);
        return {};
      });
    }
    return group.wait();
  };
  std::vector<std::string> first;
  REQUIRE(run_all(first).ok());
  CHECK(provider.refreshes() == 1);
  CHECK(fetches.load() == 3);  // token, role, credentials: once for all 32
  CHECK(std::set<std::string>(first.begin(), first.end()).size() == 1);

  // Inside the refresh margin but still valid: one caller refreshes, the others carry on with
  // the current credentials instead of waiting.
  {
    std::lock_guard lock(clock_mu);
    now = *net::parse_iso8601("2026-11-29T11:59:00Z");
  }
  expiration = "2026-11-29T18:00:00Z";
  std::vector<std::string> second;
  REQUIRE(run_all(second).ok());
  CHECK(provider.refreshes() == 2);
  CHECK(fetches.load() == 6);
  CHECK(std::count(second.begin(), second.end(), first[0]) >= 1);
}

TEST_CASE("an exchange that trickles is cut by the whole-exchange deadline", "[net][reactor]") {
  // One body byte every 20 ms never trips the 1 s stall timer; the 400 ms total does.
  LoopbackServer server([](int fd) {
    if (LoopbackServer::read_head(fd).empty()) return;
    LoopbackServer::write_all(fd, "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n");
    for (int i = 0; i < 200; ++i) {
      if (!LoopbackServer::write_all(fd, "x")) return;
      std::this_thread::sleep_for(20ms);
    }
  });
  net::ConnectOptions o{"127.0.0.1", server.port(), nullptr, Clock::now() + 5s};
  auto conn = net::Connection::open(o);
  REQUIRE(conn.ok());
  net::HttpRequest req;
  req.method = "GET";
  req.target = "/slow";
  req.host = "127.0.0.1";
  net::HttpTimeouts t{2000ms, 2000ms, 1000ms, 400ms};
  std::vector<std::byte> dest(1000);
  net::ExchangeProgress progress;
  const auto t0 = Clock::now();
  auto r = net::exchange(**conn, req, dest, t, progress);
  const auto took = Clock::now() - t0;
  REQUIRE(!r.ok());
  CHECK(r.error().code() == Errc::timeout);
  CHECK(progress.body_bytes > 0);  // it was making progress, just too slowly
  CHECK(took < 1500ms);
}

namespace {

// CreateMultipartUpload and CompleteMultipartUpload whose answers are lost: the server acts on
// each request, then resets the connection instead of answering. A HEAD finds the object.
struct MultipartServer {
  uint16_t port() const { return server.port(); }
  std::atomic<int> creates{0}, completes{0}, heads{0};
  std::string object_etag;  // what HEAD reports once completed
  std::atomic<bool> completed{false};
  LoopbackServer server{[this](int fd) {
    for (;;) {
      const std::string head = LoopbackServer::read_head(fd);
      if (head.empty()) return;
      const size_t cl = head.find("Content-Length: ");
      if (cl != std::string::npos) {
        (void)LoopbackServer::read_exact(fd, std::stoul(head.substr(cl + 16)));
      }
      const linger hard{1, 0};
      if (head.starts_with("POST") && head.find("?uploads") != std::string::npos) {
        ++creates;
        ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
        return;
      }
      if (head.starts_with("POST")) {
        ++completes;
        completed = true;
        ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
        return;
      }
      if (head.starts_with("HEAD")) {
        ++heads;
        LoopbackServer::write_all(
            fd, completed ? fmt::format("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nETag: {}\r\n\r\n",
                                        object_etag)
                          : std::string("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"));
        continue;
      }
      LoopbackServer::write_all(fd, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
    }
  }};
};

}  // namespace

TEST_CASE("multipart requests that may have taken effect are not blindly resent",
          "[net][reactor]") {
  MultipartServer srv;
  // The ETag S3 gives an object completed from parts "a" and "b": MD5 of their MD5s, "-2".
  srv.object_etag = "\"96e024ba2074fe77e8e965ba43a704be-2\"";
  net::Scheduler scheduler(8, 1, "oc-tmpu");
  auto client = client_for(fmt::format("http://127.0.0.1:{}", srv.port()), scheduler);
  SECTION("CreateMultipartUpload is sent once") {
    auto r = client->create_multipart("bkt", "obj");
    REQUIRE(!r.ok());
    CHECK(r.error().message().find("not retried") != std::string::npos);
    CHECK(srv.creates.load() == 1);
  }
  SECTION("a CompleteMultipartUpload whose answer was lost is found done, not resent") {
    const std::vector<net::CompletedPart> parts{{1, "\"0cc175b9c0f1b6a831c399e269772661\""},
                                                {2, "\"92eb5ffee6ae2fec3ad71c777531578f\""}};
    auto r = client->complete_multipart("bkt", "obj", "upload-1", parts);
    INFO((r.ok() ? std::string("ok") : r.error().to_string()));
    REQUIRE(r.ok());
    CHECK(*r == srv.object_etag);
    CHECK(srv.completes.load() == 1);
    CHECK(srv.heads.load() >= 1);
  }
}
