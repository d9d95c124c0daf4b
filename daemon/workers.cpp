// SPDX-License-Identifier: Apache-2.0
#include "daemon/workers.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

namespace oc::daemon {

Workers::Workers(uint32_t threads) : event_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
  const uint32_t n = threads ? threads : std::max(1u, std::thread::hardware_concurrency());
  for (uint32_t i = 0; i < n; ++i) threads_.emplace_back([this] { work(); });
}

Workers::~Workers() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
    jobs_.clear();
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
  ::close(event_);
}

void Workers::submit(Job job) {
  {
    std::lock_guard lock(mu_);
    jobs_.push_back(std::move(job));
  }
  cv_.notify_one();
}

void Workers::drain() {
  uint64_t ticks;
  (void)::read(event_, &ticks, sizeof(ticks));
  std::vector<Completion> done;
  {
    std::lock_guard lock(mu_);
    done.swap(done_);
  }
  for (auto& c : done) c();
}

uint64_t Workers::pending() const {
  std::lock_guard lock(mu_);
  return jobs_.size() + running_;
}

void Workers::work() {
  std::unique_lock lock(mu_);
  while (true) {
    cv_.wait(lock, [&] { return stop_ || !jobs_.empty(); });
    if (stop_) return;
    Job job = std::move(jobs_.front());
    jobs_.pop_front();
    ++running_;
    lock.unlock();
    Completion done = job();
    lock.lock();
    --running_;
    done_.push_back(std::move(done));
    const uint64_t one = 1;
    (void)::write(event_, &one, sizeof(one));
  }
}

}  // namespace oc::daemon
