// SPDX-License-Identifier: Apache-2.0
#include "format/parallel.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "config/defaults.hpp"
#include "format/buffer.hpp"

namespace oc::format {
namespace {

// One parallel_for call. Helpers hold it by shared_ptr: a helper that starts after its caller
// has returned finds it closed and touches nothing else.
struct Job {
  const std::function<Result<void>(size_t)>* item = nullptr;
  size_t n = 0;
  BufferArena* arena = nullptr;  // the caller's: its items allocate where the caller would
  std::atomic<size_t> next{0};
  std::mutex mu;
  std::condition_variable idle;
  size_t active = 0;    // helpers inside run_items
  bool closed = false;  // the caller is done; late helpers leave at once
  std::optional<Error> failed;

  void run_items() {
    for (size_t i; (i = next.fetch_add(1)) < n;) {
      Result<void> r = catch_all("decode task", [&] { return (*item)(i); });
      if (!r.ok()) {
        next.store(n);  // the others stop at their next item
        std::lock_guard lock(mu);
        if (!failed) failed = std::move(r.error());
      }
    }
  }

  void help() {
    {
      std::lock_guard lock(mu);
      if (closed) return;
      ++active;
    }
    {
      ArenaScope scope(arena);  // alive: the caller waits for every active helper
      run_items();
    }
    std::lock_guard lock(mu);
    if (--active == 0) idle.notify_all();
  }
};

class Pool {
 public:
  explicit Pool(size_t threads) {
    for (size_t t = 0; t < threads; ++t) threads_.emplace_back([this] { serve(); });
  }
  ~Pool() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    ready_.notify_all();
  }  // the jthreads join here
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;

  [[nodiscard]] size_t threads() const noexcept { return threads_.size(); }

  void offer(const std::shared_ptr<Job>& job, size_t helpers) {
    {
      std::lock_guard lock(mu_);
      for (size_t h = 0; h < helpers; ++h) queue_.push_back(job);
    }
    if (helpers == 1) {
      ready_.notify_one();
    } else {
      ready_.notify_all();
    }
  }

 private:
  void serve() {
    while (true) {
      std::shared_ptr<Job> job;
      {
        std::unique_lock lock(mu_);
        ready_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
        if (stopping_) return;
        job = std::move(queue_.front());
        queue_.pop_front();
      }
      job->help();
    }
  }

  std::mutex mu_;
  std::condition_variable ready_;
  std::deque<std::shared_ptr<Job>> queue_;
  bool stopping_ = false;
  std::vector<std::jthread> threads_;
};

// The pool of this process. A forked child inherits the parent's memory but none of its
// threads (and perhaps a locked mutex), so it makes its own and abandons the parent's copy.
Pool& process_pool() {
  static std::mutex mu;
  static pid_t owner = 0;
  static Pool* pool = nullptr;
  static std::vector<Pool*> abandoned;  // kept reachable, for leak checkers
  const pid_t self = ::getpid();
  std::lock_guard lock(mu);
  if (pool == nullptr || owner != self) {
    // Never deleted: threads may still be serving it at exit, and a child's copy is not ours.
    if (pool != nullptr) abandoned.push_back(pool);
    pool = new Pool(decode_threads() - 1);
    owner = self;
  }
  return *pool;
}

}  // namespace

size_t decode_threads() {
  const unsigned knob = defaults().scan_decode_threads;
  return knob ? knob : std::max(1u, std::thread::hardware_concurrency());
}

Result<void> parallel_for(size_t n, uint64_t rows,
                          const std::function<Result<void>(size_t)>& item) {
  auto job = std::make_shared<Job>();
  job->item = &item;
  job->n = n;
  job->arena = current_arena();
  if (rows >= kParallelFromRows && n > 1) {
    Pool& pool = process_pool();
    pool.offer(job, std::min(n - 1, pool.threads()));
  }
  job->run_items();
  std::unique_lock lock(job->mu);
  job->closed = true;
  job->idle.wait(lock, [&] { return job->active == 0; });
  if (job->failed) return std::move(*job->failed);
  return {};
}

}  // namespace oc::format
