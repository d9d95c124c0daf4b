// SPDX-License-Identifier: Apache-2.0
// Test helpers: a one-connection TCP server on 127.0.0.1 running in its own thread, and the
// byte pattern that transfers are checked against.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <thread>

namespace oc::net::test {

/// Byte @p i of the test pattern; the prime period catches shifted or repeated blocks.
inline std::byte pattern_at(uint64_t i) { return static_cast<std::byte>((i % 251) ^ (i >> 20)); }

inline void fill_pattern(std::span<std::byte> out, uint64_t offset) {
  for (size_t i = 0; i < out.size(); ++i) out[i] = pattern_at(offset + i);
}

/// @return the index of the first byte that differs from the pattern, or out.size().
inline size_t first_mismatch(std::span<const std::byte> in, uint64_t offset) {
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != pattern_at(offset + i)) return i;
  }
  return in.size();
}

/// @return a listening socket on 127.0.0.1 with an ephemeral port.
inline int listen_loopback(uint16_t* port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  bind(fd, reinterpret_cast<sockaddr*>(&addr), len);
  listen(fd, 8);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  *port = ntohs(addr.sin_port);
  return fd;
}

/// Accepts one connection and runs @p serve on it in a thread; joined on destruction (a server
/// that never got a client is woken by shutting the listener down).
class LoopbackServer {
 public:
  explicit LoopbackServer(std::function<void(int fd)> serve) : listener_(listen_loopback(&port_)) {
    thread_ = std::thread([this, serve = std::move(serve)] {
      const int fd = accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) return;
      // A test that fails half-way must not leave the server blocked forever.
      timeval tv{5, 0};
      setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
      setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
      serve(fd);
      close(fd);
    });
  }
  ~LoopbackServer() {
    // A client may have connected and left before the thread got to accept(): then the pending
    // connection is served; only a server that never got one is woken by shutting down.
    pollfd pending{listener_, POLLIN, 0};
    if (poll(&pending, 1, 0) == 0) shutdown(listener_, SHUT_RDWR);
    thread_.join();
    close(listener_);
  }
  LoopbackServer(const LoopbackServer&) = delete;
  LoopbackServer& operator=(const LoopbackServer&) = delete;
  [[nodiscard]] uint16_t port() const { return port_; }

 private:
  uint16_t port_ = 0;
  int listener_;
  std::thread thread_;
};

/// Reads until the peer closes (or the 5 s safety timeout).
inline void drain(int fd) {
  char buf[4096];
  while (::recv(fd, buf, sizeof buf, 0) > 0) {
  }
}

}  // namespace oc::net::test
