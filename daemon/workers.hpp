// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief onecopyd's worker pool: slow work (opening a file, decoding a batch into its slab) runs
/// here so that the epoll thread keeps answering every other client.
///
/// A job runs on a worker and returns a completion; completions run on the loop thread, in
/// `drain()`, which the loop calls when `event_fd()` is readable. Only the loop thread touches
/// server state, so completions need no locks; a job must touch nothing the loop may change.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace oc::daemon {

class Workers {
 public:
  using Completion = std::function<void()>;
  using Job = std::function<Completion()>;

  /// Starts @p threads workers (0 = one per core).
  explicit Workers(uint32_t threads);
  /// Finishes the jobs that are running, drops those still queued, and joins.
  ~Workers();
  Workers(const Workers&) = delete;
  Workers& operator=(const Workers&) = delete;

  /// Readable when completions are waiting.
  [[nodiscard]] int event_fd() const noexcept { return event_; }
  void submit(Job job);
  /// Runs the completions that are waiting; on the loop thread only.
  void drain();
  /// Jobs queued or running.
  [[nodiscard]] uint64_t pending() const;
  [[nodiscard]] size_t size() const noexcept { return threads_.size(); }

 private:
  void work();

  int event_ = -1;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> jobs_;
  std::vector<Completion> done_;
  uint64_t running_ = 0;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace oc::daemon
