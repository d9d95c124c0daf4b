// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief The global bound on S3 requests in flight, shared fairly between scans.
///
/// Requests are blocking calls on I/O threads, each with its own ring. The scheduler owns at most
/// `s3_max_requests_in_flight` such threads (started on demand), so that many requests are in
/// flight at most, process-wide: KvikIO measured unbounded concurrency losing 40% of throughput.
/// Work is queued per `Lane` (one per scan or transfer) and threads take lanes round-robin, so a
/// scan that queues a thousand ranges does not starve one that queues three.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "config/error.hpp"

namespace oc::net {

class Scheduler {
 public:
  /// A queue of jobs that shares the I/O threads fairly with other lanes.
  class Lane;

  explicit Scheduler(uint32_t max_in_flight);
  ~Scheduler();  ///< runs every queued job, then joins the threads
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  /// @return the process-wide scheduler, sized by `defaults().s3_max_requests_in_flight`.
  [[nodiscard]] static Scheduler& global();

  [[nodiscard]] std::shared_ptr<Lane> lane();
  /// Queues @p job on @p lane; it runs on an I/O thread.
  void submit(const std::shared_ptr<Lane>& lane, std::function<void()> job);

  /// Starts I/O threads up to @p n (at most the cap) and waits until each has its ring, so the
  /// ring setup and the registration (pinning) of the buffer pool happen now rather than inside
  /// the first requests.
  void prestart(uint32_t n);

  [[nodiscard]] uint32_t capacity() const noexcept { return cap_; }
  [[nodiscard]] uint32_t peak_in_flight() const;

 private:
  void worker();
  uint32_t cap_;
  mutable std::mutex mu_;
  std::condition_variable work_;
  std::condition_variable ready_threads_;
  uint32_t rings_ready_ = 0;
  std::list<std::shared_ptr<Lane>> ready_;  // lanes with queued jobs, in round-robin order
  std::vector<std::thread> threads_;
  uint32_t idle_ = 0, running_ = 0, peak_ = 0;
  bool stopping_ = false;
};

class Scheduler::Lane {
 private:
  friend class Scheduler;
  std::deque<std::function<void()>> jobs_;
  bool queued_ = false;
};

/// Runs jobs on a lane and waits for all of them; the first error is kept.
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
  std::condition_variable done_;
  uint64_t pending_ = 0;
  std::optional<Error> error_;
};

}  // namespace oc::net
