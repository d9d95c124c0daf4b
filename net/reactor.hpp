// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief An I/O reactor: one thread, one io_uring, many requests in flight as fibers.
///
/// Each request runs as a `Fiber` on a reactor thread. A ring operation (connect, send, receive,
/// with its linked timeout) queues its SQEs on the reactor's ring and suspends the fiber; the
/// loop submits every fiber's SQEs in one `io_uring_enter`, waits for completions, the nearest
/// timer or a wake-up from another thread (an eventfd read kept armed on the ring), and resumes
/// each fiber whose operation completed. Timers (`sleep_until`, `Waiter::wait_until`) live in the
/// loop's heap, so a request waiting out a retry backoff holds no thread. The ring is created
/// with SINGLE_ISSUER | DEFER_TASKRUN where the kernel has them (6.1): only this thread submits,
/// and completion work runs when the loop asks for it.
///
/// Code that runs on a fiber must not block its thread (no blocking syscalls, no waits on
/// `std::condition_variable`): waits go through `Waiter` and `sleep_until`, which suspend the
/// fiber on a reactor and block only a plain thread.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "config/error.hpp"
#include "net/ring.hpp"

struct io_uring_sqe;

namespace oc::net {

namespace detail {
using PrepFn = void (*)(io_uring_sqe* sqe, const void* ctx);
}

class Reactor {
 public:
  /// Starts the reactor's thread, named @p name, and its ring (@p queue_depth SQEs).
  Reactor(std::string name, unsigned queue_depth);
  /// Lets every fiber finish (timers included), then joins the thread.
  ~Reactor();
  Reactor(const Reactor&) = delete;
  Reactor& operator=(const Reactor&) = delete;

  /// Waits until the ring exists. @return why it could not be made (no io_uring, seccomp).
  [[nodiscard]] Result<void> ready();

  /// @return the reactor whose fiber is running on the calling thread; null on any other thread
  ///         (and on a reactor thread outside its fibers).
  [[nodiscard]] static Reactor* current() noexcept;

  /// Runs @p job in a new fiber on this reactor. Thread-safe. A job that cannot get a fiber
  /// (no memory for its stack) runs on the reactor thread directly, never dropped.
  void spawn(std::function<void()> job);

  [[nodiscard]] uint32_t live_fibers() const noexcept;
  [[nodiscard]] pid_t thread_id() const noexcept;  ///< the kernel's id of the reactor thread

  // ---- from one of this reactor's fibers ----------------------------------------------------

  /// Queues the SQE @p prep fills (linked to a timeout at @p deadline unless it is
  /// `Deadline::max()`), suspends the fiber until it completes, and returns its result.
  [[nodiscard]] Result<int> run_op(const char* op, int fd, Deadline deadline, detail::PrepFn prep,
                                   const void* ctx);
  /// Whether the destination pool is registered with this reactor's ring (READ_FIXED usable).
  [[nodiscard]] bool pool_registered() const noexcept;
  [[nodiscard]] const RingCounters& counters() const noexcept;
  /// Counts a receive that landed in a registered buffer (Ring::recv's READ_FIXED).
  void count_fixed_read() noexcept;

 private:
  friend class Waiter;
  friend void sleep_until(Deadline deadline);
  friend uint64_t task_cpu_ns() noexcept;
  struct State;
  std::unique_ptr<State> state_;
};

/// A one-shot wake-up for the fiber (or plain thread) that made it, triggered from any thread.
/// Whoever calls `notify` must know the waiter still exists: keep waiters in a list guarded by
/// the notifier's lock and have a waiter that gives up remove itself under that lock.
class Waiter {
 public:
  Waiter();
  Waiter(const Waiter&) = delete;
  Waiter& operator=(const Waiter&) = delete;

  /// Suspends the fiber (or blocks the thread) until `notify` or @p deadline.
  /// @return true once notified, even if that happened before the call.
  bool wait_until(Deadline deadline);
  /// Wakes the waiter; later calls do nothing.
  void notify();

 private:
  std::mutex mu_;
  std::condition_variable cv_;  // for a waiter on a plain thread
  Reactor* reactor_;
  uint64_t fiber_ = 0, token_ = 0;
  bool armed_ = false, notified_ = false;
};

/// Suspends the calling fiber until @p deadline on a timer of its reactor (holding no thread);
/// sleeps on a plain thread.
void sleep_until(Deadline deadline);

/// @return CPU time of the calling fiber (only while it ran), or of the calling plain thread.
[[nodiscard]] uint64_t task_cpu_ns() noexcept;

}  // namespace oc::net
