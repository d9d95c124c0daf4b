// SPDX-License-Identifier: Apache-2.0
#include "net/scheduler.hpp"

#include "config/defaults.hpp"
#include "net/ring.hpp"

namespace oc::net {

Scheduler::Scheduler(uint32_t max_in_flight) : cap_(std::max<uint32_t>(1, max_in_flight)) {}

Scheduler::~Scheduler() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  work_.notify_all();
  for (auto& t : threads_) t.join();
}

Scheduler& Scheduler::global() {
  // Leaked on purpose: I/O threads must not be joined during static destruction, after the
  // objects their last jobs touch may already be gone.
  static auto* s = new Scheduler(defaults().s3_max_requests_in_flight);
  return *s;
}

std::shared_ptr<Scheduler::Lane> Scheduler::lane() { return std::make_shared<Lane>(); }

void Scheduler::submit(const std::shared_ptr<Lane>& lane, std::function<void()> job) {
  std::unique_lock lock(mu_);
  lane->jobs_.push_back(std::move(job));
  if (!lane->queued_) {
    lane->queued_ = true;
    ready_.push_back(lane);
  }
  // Threads are started only when every existing one is busy, up to the cap.
  if (idle_ == 0 && threads_.size() < cap_) {
    threads_.emplace_back([this] { worker(); });
  } else {
    work_.notify_one();
  }
}

uint32_t Scheduler::peak_in_flight() const {
  std::lock_guard lock(mu_);
  return peak_;
}

void Scheduler::prestart(uint32_t n) {
  std::unique_lock lock(mu_);
  while (threads_.size() < std::min(n, cap_)) threads_.emplace_back([this] { worker(); });
  ready_threads_.wait(lock, [&] { return rings_ready_ >= threads_.size(); });
}

void Scheduler::worker() {
  // Each I/O thread owns a ring; making it first keeps its setup out of the first request. A
  // failure here is not fatal: the request that needs the ring reports it.
  (void)Ring::this_thread();
  std::unique_lock lock(mu_);
  ++rings_ready_;
  ready_threads_.notify_all();
  for (;;) {
    if (ready_.empty()) {
      if (stopping_) return;
      ++idle_;
      work_.wait(lock, [&] { return stopping_ || !ready_.empty(); });
      --idle_;
      continue;
    }
    // Round-robin: take one job from the lane at the front, then move that lane to the back.
    std::shared_ptr<Lane> lane = std::move(ready_.front());
    ready_.pop_front();
    std::function<void()> job = std::move(lane->jobs_.front());
    lane->jobs_.pop_front();
    if (lane->jobs_.empty()) {
      lane->queued_ = false;
    } else {
      ready_.push_back(lane);
    }
    ++running_;
    peak_ = std::max(peak_, running_);
    lock.unlock();
    job();
    lock.lock();
    --running_;
  }
}

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
    if (--pending_ == 0) done_.notify_all();
  });
}

Result<void> TaskGroup::wait() {
  std::unique_lock lock(mu_);
  done_.wait(lock, [&] { return pending_ == 0; });
  if (error_) return *error_;
  return {};
}

}  // namespace oc::net
