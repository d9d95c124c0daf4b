// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief The epoll set of onecopyd's event loop. Every registered descriptor carries, in
/// `epoll_event.data.ptr`, the `Watch` that handles it, so a wakeup dispatches straight to its
/// handler: no lookup by descriptor, and a cost in proportion to the descriptors that are ready.
#pragma once

#include <sys/epoll.h>

#include <cstdint>
#include <functional>

#include "config/error.hpp"
#include "config/fd.hpp"

namespace oc::daemon {

/// What the loop calls when epoll reports the descriptor it is registered with.
/// @note A watch must outlive its registration: closing the descriptor ends that, and a watch
///       reported in the same wakeup must still be valid (the loop frees closed sessions only
///       after the wakeup has been handled).
struct Watch {
  std::function<void(uint32_t events)> on_event;
};

class Epoll {
 public:
  Epoll() : fd_(::epoll_create1(EPOLL_CLOEXEC)) {}
  [[nodiscard]] bool valid() const noexcept { return fd_.valid(); }
  [[nodiscard]] int fd() const noexcept { return fd_.get(); }

  /// Registers (or, with @p modify, changes) @p fd for @p events, handled by @p watch.
  Result<void> watch(int fd, uint32_t events, Watch* watch, bool modify = false) {
    epoll_event ev{};
    ev.events = events;
    ev.data.ptr = watch;
    if (::epoll_ctl(fd_.get(), modify ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, fd, &ev) != 0) {
      return Error(Errc::io, "epoll_ctl", __FILE__, __LINE__, errno);
    }
    return {};
  }
  void forget(int fd) noexcept { (void)::epoll_ctl(fd_.get(), EPOLL_CTL_DEL, fd, nullptr); }

 private:
  UniqueFd fd_;
};

}  // namespace oc::daemon
