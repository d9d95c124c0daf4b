// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief The global bound on requests in flight, shared fairly between scans, on a few reactors.
///
/// Every request (GET, HEAD, LIST, PUT, multipart parts, credential fetches) runs as a job on one
/// of `net_reactor_threads` reactors (net/reactor.hpp), each job a fiber on its reactor's ring.
/// At most `s3_max_requests_in_flight` jobs run at once, process-wide (KvikIO measured unbounded
/// concurrency losing 40% of throughput); the thread count does not grow with that cap. Work is
/// queued per `Lane` (one per scan or transfer) and free slots take lanes round-robin, so a scan
/// that queues a thousand ranges does not starve one that queues three. Jobs must not block
/// their thread: they wait through the reactor (`Waiter`, `sleep_until`, ring operations).
#pragma once

#include <sys/types.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "config/error.hpp"
#include "net/reactor.hpp"

namespace oc::net {

class Scheduler {
 public:
  /// A queue of jobs that shares the in-flight slots fairly with other lanes.
  class Lane;

  /// @param reactors reactor threads; 0 means one per core.
  /// @param name prefix of the reactor threads' names ("oc-net-0", ...).
  explicit Scheduler(uint32_t max_in_flight, uint32_t reactors = 0, std::string name = "oc-net");
  ~Scheduler();  ///< runs every queued job, then stops the reactors
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  /// @return the process-wide scheduler, sized by `defaults().s3_max_requests_in_flight` and
  ///         `defaults().net_reactor_threads`.
  [[nodiscard]] static Scheduler& global();

  [[nodiscard]] std::shared_ptr<Lane> lane();
  /// Queues @p job on @p lane; it runs on a reactor's fiber.
  void submit(const std::shared_ptr<Lane>& lane, std::function<void()> job);

  /// Runs @p fn as one job and waits for its result: inline when the caller is already a job
  /// (a fiber of some reactor), else on a lane of its own while the calling thread waits.
  template <class F>
  auto call(F&& fn) -> decltype(fn());

  /// Starts the reactors and waits until each has its ring, so the ring setup and the
  /// registration (pinning) of the buffer pool happen now rather than inside the first requests.
  void prestart();

  [[nodiscard]] uint32_t capacity() const noexcept { return cap_; }
  [[nodiscard]] uint32_t peak_in_flight() const;
  [[nodiscard]] uint32_t in_flight() const;
  /// Reactor threads started so far (at most the configured count, whatever the cap).
  [[nodiscard]] uint32_t threads() const;
  /// Kernel thread ids of the reactors, for tests that watch them.
  [[nodiscard]] std::vector<pid_t> thread_ids() const;

 private:
  void start_reactors_locked();
  void dispatch_locked(std::unique_lock<std::mutex>& lock);
  void finished(size_t reactor);

  uint32_t cap_;
  uint32_t reactor_count_;
  std::string name_;
  mutable std::mutex mu_;
  std::condition_variable drained_;
  pid_t owner_ = 0;
  std::vector<std::unique_ptr<Reactor>> reactors_;
  std::vector<uint32_t> load_;              // jobs running per reactor
  std::list<std::shared_ptr<Lane>> ready_;  // lanes with queued jobs, in round-robin order
  uint32_t running_ = 0, peak_ = 0;
};

class Scheduler::Lane {
 private:
  friend class Scheduler;
  std::deque<std::function<void()>> jobs_;
  bool queued_ = false;
};

template <class F>
auto Scheduler::call(F&& fn) -> decltype(fn()) {
  if (Reactor::current() != nullptr) return fn();
  std::optional<decltype(fn())> out;
  std::exception_ptr thrown;  // handed back to the caller's thread, never lost in a fiber
  Waiter done;
  submit(lane(), [&] {
    try {
      out.emplace(fn());
    } catch (...) {
      thrown = std::current_exception();
    }
    done.notify();
  });
  done.wait_until(Deadline::max());
  if (thrown) std::rethrow_exception(thrown);
  return std::move(*out);
}

/// Runs jobs on a lane and waits for all of them; the first error is kept. Waits from a plain
/// thread or from a job alike (a job waits by suspending its fiber).
class TaskGroup {
 public:
  explicit TaskGroup(Scheduler& scheduler = Scheduler::global());
  ~TaskGroup();  ///< waits, so jobs never outlive what they reference
  TaskGroup(const TaskGroup&) = delete;
  TaskGroup& operator=(const TaskGroup&) = delete;

  void run(std::function<Result<void>()> job);
  /// Waits for every job; @return the first error, if any.
  [[nodiscard]] Result<void> wait();

 private:
  Scheduler& scheduler_;
  std::shared_ptr<Scheduler::Lane> lane_;
  std::mutex mu_;
  std::vector<Waiter*> waiters_;
  uint64_t pending_ = 0;
  std::optional<Error> error_;
};

}  // namespace oc::net
