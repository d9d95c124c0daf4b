// SPDX-License-Identifier: Apache-2.0
#include "net/scheduler.hpp"

#include <unistd.h>

#include <algorithm>
#include <thread>

#include "config/defaults.hpp"
#include "config/log.hpp"

namespace oc::net {

Scheduler::Scheduler(uint32_t max_in_flight, uint32_t reactors, std::string name)
    : cap_(std::max<uint32_t>(1, max_in_flight)),
      reactor_count_(reactors != 0 ? reactors
                                   : std::max<uint32_t>(1, std::thread::hardware_concurrency())),
      name_(std::move(name)) {}

Scheduler::~Scheduler() {
  std::unique_lock lock(mu_);
  drained_.wait(lock, [&] { return running_ == 0 && ready_.empty(); });
  std::vector<std::unique_ptr<Reactor>> reactors = std::move(reactors_);
  lock.unlock();
  reactors.clear();  // each lets its fibers finish and joins its thread
}

Scheduler& Scheduler::global() {
  // Leaked on purpose: reactors must not be joined during static destruction, after the
  // objects their last jobs touch may already be gone.
  static auto* s =
      new Scheduler(defaults().s3_max_requests_in_flight, defaults().net_reactor_threads);
  return *s;
}

std::shared_ptr<Scheduler::Lane> Scheduler::lane() { return std::make_shared<Lane>(); }

void Scheduler::start_reactors_locked() {
  const pid_t pid = ::getpid();
  if (owner_ != pid && !reactors_.empty()) {
    // A forked child inherits the reactors' memory but not their threads: abandon them (their
    // destructors would wait for threads that do not exist here) and start afresh.
    for (auto& r : reactors_) (void)r.release();
    reactors_.clear();
    ready_.clear();
    running_ = 0;
  }
  owner_ = pid;
  if (!reactors_.empty()) return;
  const unsigned depth = defaults().io_queue_depth;
  for (uint32_t i = 0; i < reactor_count_; ++i) {
    reactors_.push_back(std::make_unique<Reactor>(fmt::format("{}-{}", name_, i), depth));
  }
  load_.assign(reactor_count_, 0);
}

void Scheduler::submit(const std::shared_ptr<Lane>& lane, std::function<void()> job) {
  std::unique_lock lock(mu_);
  start_reactors_locked();
  lane->jobs_.push_back(std::move(job));
  if (!lane->queued_) {
    lane->queued_ = true;
    ready_.push_back(lane);
  }
  dispatch_locked(lock);
}

// Starts queued jobs while slots are free: round-robin over lanes, each on the least loaded
// reactor.
void Scheduler::dispatch_locked(std::unique_lock<std::mutex>& lock) {
  (void)lock;
  while (running_ < cap_ && !ready_.empty()) {
    std::shared_ptr<Lane> lane = std::move(ready_.front());
    ready_.pop_front();
    std::function<void()> job = std::move(lane->jobs_.front());
    lane->jobs_.pop_front();
    if (lane->jobs_.empty()) {
      lane->queued_ = false;
    } else {
      ready_.push_back(lane);
    }
    const size_t r =
        static_cast<size_t>(std::min_element(load_.begin(), load_.end()) - load_.begin());
    ++load_[r];
    ++running_;
    peak_ = std::max(peak_, running_);
    reactors_[r]->spawn([this, r, job = std::move(job)] {
      try {
        job();
      } catch (const std::exception& e) {
        log::get().error("net: a scheduler job threw: {}", e.what());
      } catch (...) {
        log::get().error("net: a scheduler job threw a non-standard exception");
      }
      finished(r);  // the slot is freed whatever the job did
    });
  }
}

void Scheduler::finished(size_t reactor) {
  std::unique_lock lock(mu_);
  --load_[reactor];
  --running_;
  dispatch_locked(lock);
  if (running_ == 0 && ready_.empty()) drained_.notify_all();
}

uint32_t Scheduler::peak_in_flight() const {
  std::lock_guard lock(mu_);
  return peak_;
}

uint32_t Scheduler::in_flight() const {
  std::lock_guard lock(mu_);
  return running_;
}

uint32_t Scheduler::threads() const {
  std::lock_guard lock(mu_);
  return static_cast<uint32_t>(reactors_.size());
}

std::vector<pid_t> Scheduler::thread_ids() const {
  std::lock_guard lock(mu_);
  std::vector<pid_t> ids;
  for (const auto& r : reactors_) ids.push_back(r->thread_id());
  return ids;
}

void Scheduler::prestart() {
  std::vector<Reactor*> started;
  {
    std::unique_lock lock(mu_);
    start_reactors_locked();
    for (auto& r : reactors_) started.push_back(r.get());
  }
  for (Reactor* r : started) {
    if (auto ok = r->ready(); !ok.ok()) {
      // Not fatal: each request then fails with this reason on its first operation.
      log::get().warn("net: a reactor has no ring: {}", ok.error().to_string());
    }
  }
}

// ---- TaskGroup
// -----------------------------------------------------------------------------------

TaskGroup::TaskGroup(Scheduler& scheduler) : scheduler_(scheduler), lane_(scheduler.lane()) {}

TaskGroup::~TaskGroup() { (void)wait(); }

void TaskGroup::run(std::function<Result<void>()> job) {
  {
    std::lock_guard lock(mu_);
    ++pending_;
  }
  scheduler_.submit(lane_, [this, job = std::move(job)] {
    Result<void> r = job();
    std::lock_guard lock(mu_);
    if (!r.ok() && !error_) error_ = std::move(r).error();
    if (--pending_ == 0) {
      for (Waiter* w : waiters_) w->notify();
      waiters_.clear();
    }
  });
}

Result<void> TaskGroup::wait() {
  std::unique_lock lock(mu_);
  if (pending_ > 0) {
    Waiter w;
    waiters_.push_back(&w);
    lock.unlock();
    w.wait_until(Deadline::max());
    lock.lock();
  }
  if (error_) return *error_;
  return {};
}

}  // namespace oc::net
