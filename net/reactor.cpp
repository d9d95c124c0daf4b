// SPDX-License-Identifier: Apache-2.0
#include "net/reactor.hpp"

#include <pthread.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <queue>
#include <thread>
#include <unordered_map>
#include <vector>

#include "config/fd.hpp"
#include "config/log.hpp"
#include "net/fiber.hpp"
#include "net/ring_core.hpp"

namespace oc::net {

namespace {

// Request code (HTTP parsing, OpenSSL, signing, logging) needs tens of KiB; stacks are reserved,
// not committed, so the margin costs address space only. ASan's redzones grow every frame.
#if defined(__SANITIZE_ADDRESS__)
constexpr size_t kStackBytes = size_t{1} << 20;
#else
constexpr size_t kStackBytes = size_t{256} << 10;
#endif

// Every request can hold a few operations at once (an op and its link timeout, a wake-up read):
// the completion queue is sized so completions never wait in the kernel's overflow list.
constexpr unsigned kCqEntries = 4096;

uint64_t thread_cpu_now() noexcept {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

// One operation in flight: lives on the suspended fiber's stack until both CQEs are in.
struct alignas(8) OpRecord {
  uint64_t fiber = 0, token = 0;
  int res = 0;
  unsigned pending = 0;
};

struct FiberRec {
  uint64_t id = 0;
  std::unique_ptr<Fiber> fiber;
  uint64_t seq = 0;        // last park token handed out
  uint64_t parked_on = 0;  // the token it waits for; valid while `parked`
  bool parked = false;
  uint64_t cpu_ns = 0;      // CPU time spent running it
  uint64_t resumed_at = 0;  // thread CPU time when it was last resumed
};

struct Wake {
  uint64_t fiber, token;
};

struct Timer {
  Deadline at;
  uint64_t fiber, token;
  bool operator>(const Timer& o) const { return at > o.at; }
};

thread_local Reactor* t_reactor = nullptr;
thread_local FiberRec* t_running = nullptr;

}  // namespace

struct Reactor::State {
  std::string name;
  unsigned depth = 0;
  detail::RingCore core;
  UniqueFd wake_fd;
  uint64_t wake_value = 0;  // the armed eventfd read lands here
  std::thread thread;
  std::atomic<pid_t> tid{0};
  std::atomic<uint32_t> live{0};

  // Setup result, published once.
  std::mutex setup_mu;
  std::condition_variable setup_cv;
  bool setup_done = false;
  std::optional<Error> setup_error;

  // Cross-thread inbox.
  std::mutex mu;
  std::vector<std::function<void()>> new_jobs;
  std::vector<Wake> wakes;
  bool stopping = false;

  // Owned by the reactor thread.
  std::unordered_map<uint64_t, std::unique_ptr<FiberRec>> fibers;
  uint64_t next_id = 1;
  std::vector<Wake> runnable;
  std::priority_queue<Timer, std::vector<Timer>, std::greater<>> timers;

  void post(auto&& push) {
    bool signal = false;
    {
      std::lock_guard lock(mu);
      signal = new_jobs.empty() && wakes.empty();
      push();
    }
    if (signal) {
      const uint64_t one = 1;
      // An eventfd write fails only when the counter would overflow, which an armed read
      // prevents; the loop also drains the inbox on every pass.
      [[maybe_unused]] const ssize_t n = ::write(wake_fd.get(), &one, sizeof one);
    }
  }

  void arm_wake_read() {
    io_uring_sqe* sqe = io_uring_get_sqe(&core.ring);
    if (sqe == nullptr) {
      io_uring_submit(&core.ring);
      sqe = io_uring_get_sqe(&core.ring);
    }
    io_uring_prep_read(sqe, wake_fd.get(), &wake_value, sizeof wake_value, 0);
    io_uring_sqe_set_data64(sqe, 0);
  }

  Result<void> setup() {
    wake_fd = UniqueFd(::eventfd(0, EFD_CLOEXEC));  // blocking: the ring polls it
    if (!wake_fd.valid()) return errno_error(errno, "eventfd for a reactor", __FILE__, __LINE__);
    OC_EXPECT(ring_features().io_uring, unsupported,
              "io_uring is not available (kernel or seccomp)");
    OC_TRY(core.init(std::max(depth, 4U), kCqEntries,
                     IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN, /*with_pool=*/true));
    return {};
  }

  void take_inbox() {
    std::vector<std::function<void()>> jobs;
    std::vector<Wake> woken;
    {
      std::lock_guard lock(mu);
      jobs.swap(new_jobs);
      woken.swap(wakes);
    }
    for (auto& job : jobs) start(std::move(job));
    runnable.insert(runnable.end(), woken.begin(), woken.end());
  }

  void start(std::function<void()> job) {
    auto rec = std::make_unique<FiberRec>();
    rec->id = next_id++;
    auto fiber = Fiber::create(std::move(job), kStackBytes);
    if (!fiber.ok()) {
      // No stack to be had (address space, map count): run the job here rather than lose it.
      // Off a fiber its ring operations block this thread on a ring of their own.
      log::get().warn("net: {}: no fiber for a request ({}); running it on the reactor thread",
                      name, fiber.error().to_string());
      job();
      return;
    }
    rec->fiber = std::move(fiber).value();
    rec->parked = true;
    rec->parked_on = 0;
    runnable.push_back({rec->id, 0});
    live.fetch_add(1, std::memory_order_relaxed);
    fibers.emplace(rec->id, std::move(rec));
  }

  void expire_timers() {
    const Deadline now = Clock::now();
    while (!timers.empty() && timers.top().at <= now) {
      runnable.push_back({timers.top().fiber, timers.top().token});
      timers.pop();
    }
  }

  void run_ready() {
    // Fibers resumed now queue SQEs and park again; whatever they wake goes to the next pass.
    std::vector<Wake> batch;
    batch.swap(runnable);
    for (const Wake& w : batch) {
      auto it = fibers.find(w.fiber);
      if (it == fibers.end()) continue;  // finished: a stale timer or wake-up
      FiberRec& rec = *it->second;
      if (!rec.parked || rec.parked_on != w.token) continue;  // already resumed for this wait
      rec.parked = false;
      t_running = &rec;
      rec.resumed_at = thread_cpu_now();
      rec.fiber->resume();
      rec.cpu_ns += thread_cpu_now() - rec.resumed_at;
      t_running = nullptr;
      if (rec.fiber->finished()) {
        fibers.erase(it);
        live.fetch_sub(1, std::memory_order_relaxed);
      }
    }
  }

  void wait_for_events() {
    for (;;) {
      int rc = 0;
      if (!runnable.empty()) {
        rc = io_uring_submit_and_get_events(&core.ring);
      } else {
        io_uring_cqe* cqe = nullptr;
        __kernel_timespec ts{};
        __kernel_timespec* tp = nullptr;
        if (!timers.empty()) {
          const auto left = std::max(Clock::duration::zero(), timers.top().at - Clock::now());
          const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
          ts.tv_sec = ns / 1'000'000'000;
          ts.tv_nsec = ns % 1'000'000'000;
          tp = &ts;
        }
        rc = io_uring_submit_and_wait_timeout(&core.ring, &cqe, 1, tp, nullptr);
      }
      core.count_submit();
      if (rc == -EINTR) continue;
      if (rc < 0 && rc != -ETIME && rc != -EBUSY) {
        log::get().error("net: {}: io_uring_enter failed: {}", name, std::strerror(-rc));
      }
      return;
    }
  }

  void reap() {
    unsigned head = 0, seen = 0;
    io_uring_cqe* cqe = nullptr;
    bool rearm = false;
    io_uring_for_each_cqe(&core.ring, head, cqe) {
      ++seen;
      const uint64_t ud = cqe->user_data;
      if (ud == 0) {
        rearm = true;
        continue;
      }
      auto* op = reinterpret_cast<OpRecord*>(ud & ~detail::kTagMask);
      if ((ud & detail::kTagMask) == detail::kOpTag) op->res = cqe->res;
      if (--op->pending == 0) runnable.push_back({op->fiber, op->token});
    }
    io_uring_cq_advance(&core.ring, seen);
    if (rearm) arm_wake_read();
  }

  bool done() {
    std::lock_guard lock(mu);
    return stopping && fibers.empty() && new_jobs.empty();
  }

  void loop(Reactor* self) {
    t_reactor = self;
    tid.store(static_cast<pid_t>(::gettid()));
    pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
    auto ok = setup();
    {
      std::lock_guard lock(setup_mu);
      setup_done = true;
      if (!ok.ok()) setup_error = std::move(ok).error();
      setup_cv.notify_all();
    }
    if (setup_error) {
      // Without a ring, jobs still must not be lost: they run and fail on their first operation.
      for (;;) {
        std::vector<std::function<void()>> jobs;
        {
          std::unique_lock lock(mu);
          if (stopping && new_jobs.empty()) return;
          jobs.swap(new_jobs);
        }
        for (auto& j : jobs) j();
        if (jobs.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    }
    arm_wake_read();
    for (;;) {
      take_inbox();
      expire_timers();
      run_ready();
      if (done()) break;
      wait_for_events();
      reap();
    }
  }

  // Parks the running fiber until a wake-up with the token it gets here.
  uint64_t next_token() { return ++t_running->seq; }
  void park(uint64_t token, Deadline deadline) {
    FiberRec& rec = *t_running;
    rec.parked = true;
    rec.parked_on = token;
    if (deadline != Deadline::max()) timers.push({deadline, rec.id, token});
    // run_ready counts the CPU time of this run when the fiber is back, and resumes it later
    // with t_running and resumed_at set again.
    rec.fiber->suspend();
  }
};

Reactor::Reactor(std::string name, unsigned queue_depth) : state_(std::make_unique<State>()) {
  state_->name = std::move(name);
  state_->depth = queue_depth;
  state_->thread = std::thread([this] { state_->loop(this); });
}

Reactor::~Reactor() {
  (void)ready();  // the eventfd exists only after setup
  {
    std::lock_guard lock(state_->mu);
    state_->stopping = true;
  }
  if (state_->wake_fd.valid()) {
    const uint64_t one = 1;
    [[maybe_unused]] const ssize_t n = ::write(state_->wake_fd.get(), &one, sizeof one);
  }
  state_->thread.join();
}

Result<void> Reactor::ready() {
  std::unique_lock lock(state_->setup_mu);
  state_->setup_cv.wait(lock, [&] { return state_->setup_done; });
  if (state_->setup_error) return *state_->setup_error;
  return {};
}

Reactor* Reactor::current() noexcept { return t_running != nullptr ? t_reactor : nullptr; }

void Reactor::spawn(std::function<void()> job) {
  state_->post([&] { state_->new_jobs.push_back(std::move(job)); });
}

uint32_t Reactor::live_fibers() const noexcept {
  return state_->live.load(std::memory_order_relaxed);
}
pid_t Reactor::thread_id() const noexcept { return state_->tid.load(); }
bool Reactor::pool_registered() const noexcept { return state_->core.pool_registered; }
const RingCounters& Reactor::counters() const noexcept { return state_->core.counters; }
void Reactor::count_fixed_read() noexcept { state_->core.count_fixed_read(); }

Result<int> Reactor::run_op(const char* op, int fd, Deadline deadline, detail::PrepFn prep,
                            const void* ctx) {
  State& s = *state_;
  const bool bounded = deadline != Deadline::max();
  __kernel_timespec ts{};
  if (bounded) {
    OC_ASSIGN_OR_RETURN(ts, detail::timeout_spec(deadline, op, fd));
  }
  // An operation and its link timeout must be adjacent in the queue.
  if (io_uring_sq_space_left(&s.core.ring) < 2) {
    io_uring_submit(&s.core.ring);
    s.core.count_submit();
  }
  io_uring_sqe* sqe = io_uring_get_sqe(&s.core.ring);
  OC_EXPECT(sqe != nullptr, io, "{} on fd {}: the reactor's submission queue is full", op, fd);
  OpRecord rec;
  rec.fiber = t_running->id;
  rec.token = s.next_token();
  rec.pending = bounded ? 2 : 1;
  prep(sqe, ctx);
  io_uring_sqe_set_data64(sqe, reinterpret_cast<uint64_t>(&rec) | detail::kOpTag);
  if (bounded) {
    sqe->flags |= IOSQE_IO_LINK;
    io_uring_sqe* t = io_uring_get_sqe(&s.core.ring);
    io_uring_prep_link_timeout(t, &ts, 0);
    io_uring_sqe_set_data64(t, reinterpret_cast<uint64_t>(&rec) | detail::kTimeoutTag);
  }
  // Only the completions of this record wake the fiber with this token.
  while (rec.pending > 0) s.park(rec.token, Deadline::max());
  s.core.count_operation();
  return detail::op_result(rec.res, bounded, op, fd);
}

// ---- Waiter
// --------------------------------------------------------------------------------------

Waiter::Waiter() : reactor_(Reactor::current()) {
  if (reactor_ != nullptr) fiber_ = t_running->id;
}

bool Waiter::wait_until(Deadline deadline) {
  std::unique_lock lock(mu_);
  if (notified_) return true;
  if (reactor_ == nullptr) {
    if (deadline == Deadline::max()) {
      cv_.wait(lock, [&] { return notified_; });
    } else {
      cv_.wait_until(lock, deadline, [&] { return notified_; });
    }
    return notified_;
  }
  Reactor::State& s = *reactor_->state_;
  token_ = s.next_token();
  armed_ = true;
  lock.unlock();
  // A notify from here on posts a wake-up with this token; the loop reads it only after the
  // fiber has parked, since both run on this thread.
  s.park(token_, deadline);
  lock.lock();
  armed_ = false;
  return notified_;
}

void Waiter::notify() {
  std::lock_guard lock(mu_);
  if (notified_) return;
  notified_ = true;
  if (reactor_ == nullptr) {
    cv_.notify_all();
  } else if (armed_) {
    const Wake w{fiber_, token_};
    reactor_->state_->post([&] { reactor_->state_->wakes.push_back(w); });
  }
}

// ---- free functions
// ------------------------------------------------------------------------------

void sleep_until(Deadline deadline) {
  Reactor* r = Reactor::current();
  if (r == nullptr) {
    std::this_thread::sleep_until(deadline);
    return;
  }
  Reactor::State& s = *r->state_;
  while (Clock::now() < deadline) s.park(s.next_token(), deadline);
}

uint64_t task_cpu_ns() noexcept {
  if (Reactor::current() == nullptr) return thread_cpu_now();
  return t_running->cpu_ns + (thread_cpu_now() - t_running->resumed_at);
}

}  // namespace oc::net
