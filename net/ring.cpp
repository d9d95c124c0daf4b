// SPDX-License-Identifier: Apache-2.0
#include "net/ring.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include "config/defaults.hpp"
#include "config/log.hpp"
#include "net/buffer_pool.hpp"
#include "net/reactor.hpp"
#include "net/ring_core.hpp"

namespace oc::net {

namespace {

// Process-wide sums of every ring's counters, read by benchmarks and status output.
struct Totals {
  std::atomic<uint64_t> submits{0}, operations{0}, fixed_reads{0};
} g_totals;

// The pool is pinned once per ring; a failure (RLIMIT_MEMLOCK, ENOMEM) only costs the fixed-read
// fast path, so it is reported once at debug level and the ring uses plain receives.
void register_pool(detail::RingCore& s) {
  const auto iov = BufferPool::global().registration();
  if (iov.empty() || !ring_features().registered_buffers) return;
  const int rc = io_uring_register_buffers(&s.ring, iov.data(), static_cast<unsigned>(iov.size()));
  if (rc < 0) {
    static std::once_flag logged;
    std::call_once(logged, [rc] {
      log::get().debug(
          "net: registering the buffer pool with io_uring failed ({}); using plain recv",
          std::strerror(-rc));
    });
    return;
  }
  s.pool_registered = true;
}

// Submits the SQE that @p prep fills, linked to a timeout at @p deadline, and waits for both
// completions so the ring is idle again on return: a plain thread's blocking operation.
Result<int> run_blocking(detail::RingCore& s, const char* op, int fd, Deadline deadline,
                         detail::PrepFn prep, const void* ctx) {
  const bool bounded = deadline != Deadline::max();
  __kernel_timespec ts{};
  if (bounded) {
    OC_ASSIGN_OR_RETURN(ts, detail::timeout_spec(deadline, op, fd));
  }
  // One operation at a time and a depth of at least two: both SQEs are always available.
  io_uring_sqe* sqe = io_uring_get_sqe(&s.ring);
  prep(sqe, ctx);
  io_uring_sqe_set_data64(sqe, detail::kOpTag);
  unsigned pending = 1;
  if (bounded) {
    sqe->flags |= IOSQE_IO_LINK;
    io_uring_sqe* t = io_uring_get_sqe(&s.ring);
    io_uring_prep_link_timeout(t, &ts, 0);
    io_uring_sqe_set_data64(t, detail::kTimeoutTag);
    ++pending;
  }
  int rc = 0;
  do {
    rc = io_uring_submit_and_wait(&s.ring, pending);
    s.count_submit();
  } while (rc == -EINTR);
  if (rc < 0)
    return errno_error(rc, fmt::format("io_uring_enter for {} on fd {}", op, fd), __FILE__,
                       __LINE__);
  int res = 0;
  while (pending > 0) {
    io_uring_cqe* cqe = nullptr;
    if (io_uring_peek_cqe(&s.ring, &cqe) != 0) {
      s.count_submit();
      rc = io_uring_wait_cqe(&s.ring, &cqe);
      if (rc == -EINTR) continue;
      if (rc < 0)
        return errno_error(rc, fmt::format("waiting for {} on fd {}", op, fd), __FILE__, __LINE__);
    }
    if (cqe->user_data == detail::kOpTag) res = cqe->res;
    io_uring_cqe_seen(&s.ring, cqe);
    --pending;
  }
  s.count_operation();
  return detail::op_result(res, bounded, op, fd);
}

// Adapts a lambda to the reactor's and run_blocking's function-pointer interface.
template <class F>
void call_prep(io_uring_sqe* sqe, const void* ctx) {
  (*static_cast<const F*>(ctx))(sqe);
}

}  // namespace

namespace detail {

Result<void> RingCore::init(unsigned sq_entries, unsigned cq_entries, unsigned flags,
                            bool with_pool) {
  io_uring_params p{};
  int rc = -EINVAL;
  // Fall back flag by flag: kernels before 6.1 refuse DEFER_TASKRUN and SINGLE_ISSUER.
  for (unsigned f : {flags, flags & ~unsigned{IORING_SETUP_DEFER_TASKRUN}, 0U}) {
    p = {};
    p.flags = f;
    if (cq_entries > sq_entries) {
      p.flags |= IORING_SETUP_CQSIZE;
      p.cq_entries = cq_entries;
    }
    rc = io_uring_queue_init_params(sq_entries, &ring, &p);
    if (rc != -EINVAL) break;
  }
  if (rc < 0) return errno_error(rc, "io_uring_queue_init", __FILE__, __LINE__);
  live = true;
  if (with_pool) register_pool(*this);
  return {};
}

RingCore::~RingCore() {
  if (live) io_uring_queue_exit(&ring);
}

void RingCore::count_submit() noexcept {
  ++counters.submits;
  g_totals.submits.fetch_add(1, std::memory_order_relaxed);
}
void RingCore::count_operation() noexcept {
  ++counters.operations;
  g_totals.operations.fetch_add(1, std::memory_order_relaxed);
}
void RingCore::count_fixed_read() noexcept {
  ++counters.fixed_reads;
  g_totals.fixed_reads.fetch_add(1, std::memory_order_relaxed);
}

Result<__kernel_timespec> timeout_spec(Deadline deadline, const char* op, int fd) {
  const auto left = std::chrono::duration_cast<std::chrono::nanoseconds>(deadline - Clock::now());
  OC_EXPECT(left.count() > 0, timeout, "{} on fd {}: deadline passed", op, fd);
  __kernel_timespec ts{};
  ts.tv_sec = left.count() / 1'000'000'000;
  ts.tv_nsec = left.count() % 1'000'000'000;
  return ts;
}

Result<int> op_result(int res, bool bounded, const char* op, int fd) {
  // The link timeout cancels the operation, which then completes with -ECANCELED.
  OC_EXPECT(!(bounded && res == -ECANCELED), timeout, "{} on fd {} timed out", op, fd);
  if (res < 0) return errno_error(res, fmt::format("{} on fd {}", op, fd), __FILE__, __LINE__);
  return res;
}

}  // namespace detail

// A plain thread's ring is made on its first blocking operation; on a reactor's fibers every
// operation goes to the reactor's ring instead and this one is never created.
struct Ring::State {
  detail::RingCore core;
  pid_t owner = 0;
};

Ring::Ring() : state_(new State) {}

Ring::~Ring() { delete state_; }

Result<Ring*> Ring::this_thread() {
  thread_local std::unique_ptr<Ring> ring;
  if (!ring) ring.reset(new Ring());
  return ring.get();
}

template <class F>
Result<int> Ring::run(const char* op, int fd, Deadline deadline, const F& prep) {
  if (Reactor* r = Reactor::current()) return r->run_op(op, fd, deadline, &call_prep<F>, &prep);
  State& s = *state_;
  if (s.core.live && s.owner != ::getpid()) {
    // After a fork the child's copy of the ring shares its memory with the parent's: release
    // the child's mapping and descriptor (the parent's ring lives on) and make a new ring.
    io_uring_queue_exit(&s.core.ring);
    s.core.live = false;
    s.core.pool_registered = false;
  }
  if (!s.core.live) {
    OC_EXPECT(ring_features().io_uring, unsupported,
              "io_uring is not available (kernel or seccomp)");
    // Every operation may need a second SQE for its linked timeout. No pool registration here:
    // client requests run on reactors, whose rings pin the pool at start-up; pinning it for a
    // plain thread's first operation could take seconds of that operation's deadline.
    OC_TRY(s.core.init(std::max(defaults().io_queue_depth, 2U), 0, 0, /*with_pool=*/false));
    s.owner = ::getpid();
  }
  return run_blocking(s.core, op, fd, deadline, &call_prep<F>, &prep);
}

bool Ring::pool_registered() const noexcept {
  if (Reactor* r = Reactor::current()) return r->pool_registered();
  return state_->core.pool_registered;
}

Result<void> Ring::connect(int fd, const sockaddr* addr, socklen_t len, Deadline deadline) {
  OC_TRY(run("connect", fd, deadline,
             [&](io_uring_sqe* sqe) { io_uring_prep_connect(sqe, fd, addr, len); }));
  return {};
}

Result<void> Ring::send_all(int fd, std::span<const iovec> pieces, Deadline deadline) {
  // A private copy, advanced in place across short writes.
  std::vector<iovec> iov;
  iov.reserve(pieces.size());
  for (const iovec& p : pieces) {
    if (p.iov_len > 0) iov.push_back(p);
  }
  size_t first = 0;
  while (first < iov.size()) {
    msghdr msg{};
    msg.msg_iov = &iov[first];
    msg.msg_iovlen = std::min<size_t>(iov.size() - first, IOV_MAX);
    OC_ASSIGN_OR_RETURN(const int sent, run("sendmsg", fd, deadline, [&](io_uring_sqe* sqe) {
                          io_uring_prep_sendmsg(sqe, fd, &msg, MSG_NOSIGNAL);
                        }));
    OC_EXPECT(sent > 0, io, "sendmsg on fd {} made no progress", fd);
    auto left = static_cast<size_t>(sent);
    while (left > 0 && left >= iov[first].iov_len) left -= iov[first++].iov_len;
    if (left > 0) {
      iov[first].iov_base = static_cast<char*>(iov[first].iov_base) + left;
      iov[first].iov_len -= left;
    }
  }
  return {};
}

Result<size_t> Ring::recv(int fd, std::span<std::byte> dest, Deadline deadline) {
  // The kernel caps one read at INT_MAX bytes anyway; callers loop on short reads.
  size_t len = std::min<size_t>(dest.size(), INT_MAX);
  int index = -1;
  if (ring_features().recv_fixed && len > 0 && pool_registered()) {
    const BufferPool& pool = BufferPool::global();
    index = pool.fixed_slot(dest.data(), 1).buf_index;
    if (index >= 0) {
      // A read must stay inside one registered buffer; the pool splits at 1 GiB.
      const iovec& piece = pool.registration()[static_cast<size_t>(index)];
      const auto* end = static_cast<const std::byte*>(piece.iov_base) + piece.iov_len;
      len = std::min(len, static_cast<size_t>(end - dest.data()));
    }
  }
  const bool fixed = index >= 0;
  OC_ASSIGN_OR_RETURN(
      const int got, run(fixed ? "read_fixed" : "recv", fd, deadline, [&](io_uring_sqe* sqe) {
        if (fixed) {
          io_uring_prep_read_fixed(sqe, fd, dest.data(), static_cast<unsigned>(len), 0, index);
        } else {
          io_uring_prep_recv(sqe, fd, dest.data(), len, 0);
        }
      }));
  if (fixed) {
    if (Reactor* r = Reactor::current()) {
      r->count_fixed_read();
    } else {
      state_->core.count_fixed_read();
    }
  }
  return static_cast<size_t>(got);
}

Result<void> Ring::poll(int fd, short events, Deadline deadline) {
  OC_TRY(run("poll", fd, deadline, [&](io_uring_sqe* sqe) {
    io_uring_prep_poll_add(sqe, fd, static_cast<unsigned>(events));
  }));
  return {};
}

Result<size_t> Ring::recvmsg(int fd, msghdr* msg, Deadline deadline) {
  OC_ASSIGN_OR_RETURN(const int got, run("recvmsg", fd, deadline, [&](io_uring_sqe* sqe) {
                        io_uring_prep_recvmsg(sqe, fd, msg, 0);
                      }));
  return static_cast<size_t>(got);
}

const RingCounters& Ring::counters() const noexcept {
  if (Reactor* r = Reactor::current()) return r->counters();
  return state_->core.counters;
}

RingCounters ring_totals() noexcept {
  RingCounters c;
  c.submits = g_totals.submits.load(std::memory_order_relaxed);
  c.operations = g_totals.operations.load(std::memory_order_relaxed);
  c.fixed_reads = g_totals.fixed_reads.load(std::memory_order_relaxed);
  return c;
}

}  // namespace oc::net
