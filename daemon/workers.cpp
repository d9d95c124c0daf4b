// SPDX-License-Identifier: Apache-2.0
#include "daemon/workers.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include "config/log.hpp"

namespace oc::daemon {

Workers::Workers() : event_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}

Workers::Workers(uint32_t threads, uint32_t owner_share, uint32_t group_share) : Workers() {
  share_ = owner_share;
  group_share_ = group_share;
  for (uint32_t i = 0; i < std::max(1u, threads); ++i) threads_.emplace_back([this] { work(); });
}

std::unique_ptr<Workers> Workers::inline_pool() { return std::unique_ptr<Workers>(new Workers()); }

Workers::~Workers() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
    owners_.clear();
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
  ::close(event_);
}

Workers::Completion Workers::run(Entry& e) noexcept {
  try {
    Completion done = e.job();
    if (done) return done;
  } catch (...) {
    log::get().error("a daemon job threw; its request fails");
  }
  return std::move(e.if_thrown);
}

void Workers::finish(Completion done) {
  done_.push_back(std::move(done));
  const uint64_t one = 1;
  (void)::write(event_, &one, sizeof(one));
}

void Workers::submit(uint64_t owner, uint64_t group, Job job, Completion if_thrown) {
  Entry e{std::move(job), std::move(if_thrown)};
  if (threads_.empty()) {
    Completion done = run(e);
    std::lock_guard lock(mu_);
    finish(std::move(done));
    return;
  }
  {
    std::lock_guard lock(mu_);
    Owner& o = owners_[owner];
    o.group = group;
    o.queue.push_back(std::move(e));
    ++queued_;
  }
  cv_.notify_one();
}

size_t Workers::drain() {
  uint64_t ticks;
  (void)::read(event_, &ticks, sizeof(ticks));
  std::vector<Completion> done;
  {
    std::lock_guard lock(mu_);
    done.swap(done_);
  }
  for (auto& c : done) {
    if (c) c();
  }
  return done.size();
}

uint64_t Workers::pending() const {
  std::lock_guard lock(mu_);
  return queued_ + running_;
}

std::map<uint64_t, Workers::Owner>::iterator Workers::next_owner() {
  auto fits = [&](const Owner& o) {
    if (o.queue.empty() || (share_ != 0 && o.running >= share_)) return false;
    if (group_share_ == 0) return true;
    auto g = group_running_.find(o.group);
    return g == group_running_.end() || g->second < group_share_;
  };
  for (auto it = owners_.upper_bound(last_owner_); it != owners_.end(); ++it) {
    if (fits(it->second)) return it;
  }
  for (auto it = owners_.begin(); it != owners_.end() && it->first <= last_owner_; ++it) {
    if (fits(it->second)) return it;
  }
  return owners_.end();
}

void Workers::work() {
  std::unique_lock lock(mu_);
  while (true) {
    auto it = owners_.end();
    cv_.wait(lock, [&] { return stop_ || (it = next_owner()) != owners_.end(); });
    if (stop_) return;
    const uint64_t owner = it->first;
    Entry e = std::move(it->second.queue.front());
    it->second.queue.pop_front();
    ++it->second.running;
    const uint64_t group = it->second.group;
    ++group_running_[group];
    --queued_;
    ++running_;
    last_owner_ = owner;
    lock.unlock();
    Completion done = run(e);
    lock.lock();
    --running_;
    if (auto g = group_running_.find(group); g != group_running_.end() && --g->second == 0) {
      group_running_.erase(g);
    }
    if (auto o = owners_.find(owner); o != owners_.end()) {
      --o->second.running;
      if (o->second.running == 0 && o->second.queue.empty()) owners_.erase(o);
    }
    finish(std::move(done));
    // A finished job may let a capped owner's next job run.
    cv_.notify_all();
  }
}

}  // namespace oc::daemon
