// SPDX-License-Identifier: Apache-2.0
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include <catch2/catch.hpp>
#include <vector>

#include "net/buffer_pool.hpp"
#include "net/ring.hpp"
#include "net/scheduler.hpp"
#include "tests/net/loopback.hpp"

using namespace std::chrono_literals;
using oc::Errc;
using namespace oc::net;
using namespace oc::net::test;

namespace {

Ring& ring() {
  auto r = Ring::this_thread();
  REQUIRE(r.ok());
  return **r;
}

// A TCP socket connected to @p port through the ring.
int connect_to(uint16_t port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  auto r = ring().connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr, Clock::now() + 2s);
  REQUIRE(r.ok());
  return fd;
}

// The kTLS probe repeated independently: attach the TLS ULP to an established loopback socket.
bool kernel_takes_tls_ulp() {
  uint16_t port = 0;
  const int listener = listen_loopback(&port);
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
                  setsockopt(fd, SOL_TCP, TCP_ULP, "tls", 3) == 0;
  close(fd);
  close(listener);
  return ok;
}

}  // namespace

TEST_CASE("ring features are probed once and consistently", "[net]") {
  const RingFeatures& f = ring_features();
  CHECK(&f == &ring_features());
  CHECK(f.io_uring);
  CHECK((!f.recv_fixed || f.registered_buffers));
  CHECK(f.ktls == kernel_takes_tls_ulp());
  const std::string d = f.describe();
  CHECK(d.find(f.ktls ? " ktls" : "!ktls") != std::string::npos);
  CHECK(d.rfind("io_uring", 0) == 0);
}

TEST_CASE("ring connect to a closed port is Errc::io ECONNREFUSED", "[net]") {
  uint16_t port = 0;
  close(listen_loopback(&port));  // the port is now free and closed
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  auto r = ring().connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr, Clock::now() + 2s);
  close(fd);
  REQUIRE(!r.ok());
  CHECK(r.error().code() == Errc::io);
  CHECK(r.error().sys_errno() == ECONNREFUSED);
  CHECK(r.error().message().find("connect") != std::string::npos);
}

TEST_CASE("ring recv from a silent server times out near the deadline", "[net]") {
  LoopbackServer server(drain);
  const int fd = connect_to(server.port());
  std::vector<std::byte> buf(64);
  const auto start = Clock::now();
  auto r = ring().recv(fd, buf, start + 200ms);
  const auto took = Clock::now() - start;
  close(fd);
  REQUIRE(!r.ok());
  CHECK(r.error().code() == Errc::timeout);
  CHECK(took >= 150ms);
  CHECK(took < 2s);
}

TEST_CASE("ring send_all delivers many gathered pieces intact", "[net]") {
  // More pieces than IOV_MAX, of uneven sizes, so sendmsg is split and resumed.
  std::vector<std::byte> data(3 << 20);
  fill_pattern(data, 0);
  std::vector<iovec> pieces;
  for (size_t off = 0, i = 0; off < data.size(); ++i) {
    const size_t n = std::min<size_t>(1 + (i * 97) % 2000, data.size() - off);
    pieces.push_back(iovec{data.data() + off, n});
    off += n;
  }
  REQUIRE(pieces.size() > 1024);
  std::vector<std::byte> got;
  {
    LoopbackServer server([&got](int fd) {
      std::byte buf[65536];
      ssize_t n;
      while ((n = ::recv(fd, buf, sizeof buf, 0)) > 0) got.insert(got.end(), buf, buf + n);
    });
    const int fd = connect_to(server.port());
    auto r = ring().send_all(fd, pieces, Clock::now() + 5s);
    close(fd);
    REQUIRE(r.ok());
  }
  REQUIRE(got.size() == data.size());
  CHECK(first_mismatch(got, 0) == got.size());
}

TEST_CASE("ring recv uses READ_FIXED inside the pool and plain recv elsewhere", "[net]") {
  constexpr size_t kBytes = 1 << 20;
  LoopbackServer server([](int fd) {
    std::vector<std::byte> data(2 * kBytes);
    fill_pattern(data, 0);
    (void)::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    drain(fd);
  });
  const int fd = connect_to(server.port());
  // On a reactor, whose ring registered the pool at start-up.
  Scheduler scheduler(1, 1, "oc-tring");
  scheduler.call([&] {
    Ring& r = ring();
    auto lease = BufferPool::global().acquire(kBytes);
    REQUIRE(lease.ok());
    const bool fixed = lease->pinned() && ring_features().recv_fixed;
    auto read_all = [&](std::span<std::byte> dest, uint64_t offset) {
      for (size_t done = 0; done < dest.size();) {
        auto n = r.recv(fd, dest.subspan(done), Clock::now() + 5s);
        REQUIRE(n.ok());
        REQUIRE(*n > 0);
        done += *n;
      }
      CHECK(first_mismatch(dest, offset) == dest.size());
    };
    const uint64_t before = r.counters().fixed_reads;
    read_all(lease->bytes(), 0);
    const uint64_t after_pool = r.counters().fixed_reads;
    CHECK((after_pool > before) == fixed);
    std::vector<std::byte> heap(kBytes);
    read_all(heap, kBytes);
    CHECK(r.counters().fixed_reads == after_pool);
    CHECK(r.counters().operations > 0);
    CHECK(r.counters().submits >= r.counters().operations);
    return 0;
  });
  close(fd);
}

TEST_CASE("ring poll waits for readiness until its deadline, on a thread or a reactor", "[net]") {
  int sv[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
  auto check = [&] {
    Ring& r = ring();
    auto idle = r.poll(sv[0], POLLIN, Clock::now() + 50ms);
    REQUIRE(!idle.ok());
    CHECK(idle.error().code() == Errc::timeout);
    CHECK(::write(sv[1], "x", 1) == 1);
    CHECK(r.poll(sv[0], POLLIN, Clock::now() + 5s).ok());
    char c;
    CHECK(::read(sv[0], &c, 1) == 1);
    CHECK(r.poll(sv[0], POLLOUT, Clock::now() + 5s).ok());
    return 0;
  };
  SECTION("plain thread") { check(); }
  SECTION("reactor") {
    Scheduler scheduler(1, 1, "oc-tpoll");
    scheduler.call(check);
  }
  ::close(sv[0]);
  ::close(sv[1]);
}
