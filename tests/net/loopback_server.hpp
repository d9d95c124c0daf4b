// SPDX-License-Identifier: Apache-2.0
// A scripted TCP server on 127.0.0.1 for transport and HTTP tests: each accepted connection is
// handed to the test's handler on its own thread. Blocking sockets, no io_uring: the server is
// the fixed point the client under test is checked against.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace oc::test {

class LoopbackServer {
 public:
  using Handler = std::function<void(int fd)>;

  /// Listens on 127.0.0.1, or on ::1 with @p ipv6.
  explicit LoopbackServer(Handler handler, bool ipv6 = false) : handler_(std::move(handler)) {
    listen_fd_ = ::socket(ipv6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (ipv6) {
      sockaddr_in6 a{};
      a.sin6_family = AF_INET6;
      a.sin6_addr = in6addr_loopback;
      ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a);
      socklen_t len = sizeof a;
      ::listen(listen_fd_, 1024);
      ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len);
      port_ = ntohs(a.sin6_port);
    } else {
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a);
      ::listen(listen_fd_, 1024);
      socklen_t len = sizeof a;
      ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len);
      port_ = ntohs(a.sin_port);
    }
    acceptor_ = std::thread([this] { accept_loop(); });
  }
  ~LoopbackServer() {
    stopping_ = true;
    ::shutdown(listen_fd_, SHUT_RDWR);
    ::close(listen_fd_);
    acceptor_.join();
    std::lock_guard lock(mu_);
    for (auto& t : workers_) t.join();
  }
  LoopbackServer(const LoopbackServer&) = delete;
  LoopbackServer& operator=(const LoopbackServer&) = delete;

  [[nodiscard]] uint16_t port() const { return port_; }
  [[nodiscard]] int accepted() const { return accepted_.load(); }

  // Helpers for handlers.
  static bool write_all(int fd, std::string_view s) {
    while (!s.empty()) {
      const ssize_t n = ::send(fd, s.data(), s.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      s.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }
  // Reads one request head (through the blank line); returns "" at EOF.
  static std::string read_head(int fd) {
    std::string head;
    char c;
    while (head.size() < 65536 && ::recv(fd, &c, 1, 0) == 1) {
      head.push_back(c);
      if (head.ends_with("\r\n\r\n")) return head;
    }
    return {};
  }
  static std::string read_exact(int fd, size_t n) {
    std::string s(n, '\0');
    size_t got = 0;
    while (got < n) {
      const ssize_t r = ::recv(fd, s.data() + got, n - got, 0);
      if (r <= 0) break;
      got += static_cast<size_t>(r);
    }
    s.resize(got);
    return s;
  }

 private:
  void accept_loop() {
    for (;;) {
      const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) return;
      ++accepted_;
      std::lock_guard lock(mu_);
      workers_.emplace_back([this, fd] {
        handler_(fd);
        ::close(fd);
      });
    }
  }

  Handler handler_;
  int listen_fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<int> accepted_{0};
  std::thread acceptor_;
  std::mutex mu_;
  std::vector<std::thread> workers_;
};

}  // namespace oc::test
