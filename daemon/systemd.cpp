// SPDX-License-Identifier: Apache-2.0
// The sd_notify(3) and sd_listen_fds(3) protocols: a datagram of KEY=VALUE lines to the
// socket named by $NOTIFY_SOCKET ('@' for the abstract namespace), and descriptors from 3 on.
#include "daemon/systemd.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>

namespace oc::daemon {

void sd_notify(const std::string& state) {
  const char* path = std::getenv("NOTIFY_SOCKET");
  if (!path || !*path) return;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const size_t len = std::strlen(path);
  if (len >= sizeof(addr.sun_path)) return;
  std::memcpy(addr.sun_path, path, len);
  if (addr.sun_path[0] == '@') addr.sun_path[0] = '\0';  // abstract namespace
  int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return;
  (void)::sendto(fd, state.data(), state.size(), MSG_NOSIGNAL, reinterpret_cast<sockaddr*>(&addr),
                 static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + len));
  ::close(fd);
}

int socket_from_systemd() {
  const char* pid = std::getenv("LISTEN_PID");
  const char* fds = std::getenv("LISTEN_FDS");
  if (!pid || !fds || std::strtol(pid, nullptr, 10) != ::getpid() || std::atoi(fds) < 1) {
    return -1;
  }
  constexpr int kFirst = 3;  // SD_LISTEN_FDS_START
  ::fcntl(kFirst, F_SETFD, FD_CLOEXEC);
  ::fcntl(kFirst, F_SETFL, ::fcntl(kFirst, F_GETFL) | O_NONBLOCK);
  ::unsetenv("LISTEN_PID");
  ::unsetenv("LISTEN_FDS");
  ::unsetenv("LISTEN_FDNAMES");
  return kFirst;
}

uint64_t watchdog_interval_us(uint32_t fallback_ms) {
  if (const char* w = std::getenv("WATCHDOG_USEC")) {
    const char* wpid = std::getenv("WATCHDOG_PID");
    if (!wpid || std::strtol(wpid, nullptr, 10) == ::getpid()) {
      return std::strtoull(w, nullptr, 10) / 2;
    }
  }
  return uint64_t{fallback_ms} * 1000;
}

}  // namespace oc::daemon
