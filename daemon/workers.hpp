// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief onecopyd's worker pools: slow work (opening a file, planning a scan, decoding a batch
/// into its slab) runs here so that the event loop keeps answering every client.
///
/// A job runs on a worker and returns a completion; completions run on the loop thread, in
/// `drain()`, which the loop calls when `event_fd()` is readable. Only the loop thread touches
/// server state, so completions need no locks; a job must touch nothing the loop may change.
///
/// Jobs are queued per owner (onecopyd: the client connection) and owners take turns, so one
/// client's queue of a hundred opens never stands in front of another's one decode. A pool whose
/// jobs may wait on the network also caps the threads one owner, and one group of owners (a
/// user's connections), hold at once, so that other owners always find a thread free. Nothing a
/// job throws leaves its thread: the completion given for that case runs instead.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace oc::daemon {

class Workers {
 public:
  using Completion = std::function<void()>;
  using Job = std::function<Completion()>;

  /// Starts @p threads workers (at least one).
  /// @param owner_share the most threads one owner's jobs may run on at once; 0 for no cap.
  /// @param group_share the same for the owners of one group together; 0 for no cap.
  Workers(uint32_t threads, uint32_t owner_share, uint32_t group_share);
  /// A pool with no threads: each job runs on the calling thread inside `submit` (for fuzzing
  /// and tests); its completion still waits for `drain()`.
  [[nodiscard]] static std::unique_ptr<Workers> inline_pool();
  /// Finishes the jobs that are running, drops those still queued, and joins.
  ~Workers();
  Workers(const Workers&) = delete;
  Workers& operator=(const Workers&) = delete;

  /// Readable when completions are waiting.
  [[nodiscard]] int event_fd() const noexcept { return event_; }
  /// Queues @p job for @p owner of @p group. @p if_thrown is the completion that runs should the
  /// job throw.
  void submit(uint64_t owner, uint64_t group, Job job, Completion if_thrown);
  /// Runs the completions that are waiting; on the loop thread only. @return how many ran.
  size_t drain();
  /// Jobs queued or running.
  [[nodiscard]] uint64_t pending() const;
  /// Threads (0 for an inline pool).
  [[nodiscard]] size_t size() const noexcept { return threads_.size(); }

 private:
  struct Entry {
    Job job;
    Completion if_thrown;
  };
  struct Owner {
    uint64_t group = 0;
    std::deque<Entry> queue;
    uint32_t running = 0;
  };
  Workers();
  void work();
  // The next owner after the last one served that has a job and a free share; end() if none.
  std::map<uint64_t, Owner>::iterator next_owner();
  static Completion run(Entry& e) noexcept;
  void finish(Completion done);

  int event_ = -1;
  uint32_t share_ = 0, group_share_ = 0;
  std::map<uint64_t, uint32_t> group_running_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<uint64_t, Owner> owners_;  // owners with queued or running jobs
  uint64_t last_owner_ = 0;
  uint64_t queued_ = 0, running_ = 0;
  std::vector<Completion> done_;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace oc::daemon
