// SPDX-License-Identifier: Apache-2.0
#include "net/ring.hpp"

#include <liburing.h>
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

namespace oc::net {

namespace {

// Process-wide sums of every ring's counters, read by benchmarks and status output.
struct Totals {
  std::atomic<uint64_t> submits{0}, operations{0}, fixed_reads{0};
} g_totals;

// Ring::State's contents, visible to the helpers below.
struct RingCore {
  io_uring ring{};
  bool live = false;
  bool pool_registered = false;
  RingCounters counters;
};

// An operation and its linked timeout complete as two CQEs; the tags tell them apart.
constexpr uint64_t kOpTag = 1;
constexpr uint64_t kTimeoutTag = 2;

// The pool is pinned once per ring; a failure (RLIMIT_MEMLOCK, ENOMEM) only costs the fixed-read
// fast path, so it is reported once at debug level and the ring uses plain receives.
void register_pool(RingCore& s) {
  const auto iov = BufferPool::global().registration();
  if (iov.empty() || !ring_features().registered_buffers) return;
  const int rc = io_uring_register_buffers(&s.ring, iov.data(), static_cast<unsigned>(iov.size()));
  if (rc < 0) {
    static std::once_flag logged;
    std::call_once(logged, [rc] {
      log::get().debug("net: registering the buffer pool with io_uring failed ({}); using plain recv",
                       std::strerror(-rc));
    });
    return;
  }
  s.pool_registered = true;
}

// Submits the SQE that @p prep fills, linked to a timeout at @p deadline, and waits for both
// completions so the ring is idle again on return. @return the operation's non-negative result.
template <class Prep>
Result<int> run_op(RingCore& s, const char* op, int fd, Deadline deadline, Prep&& prep) {
  const bool bounded = deadline != Deadline::max();
  __kernel_timespec ts{};
  if (bounded) {
    const auto left = std::chrono::duration_cast<std::chrono::nanoseconds>(deadline - Clock::now());
    OC_EXPECT(left.count() > 0, timeout, "{} on fd {}: deadline passed", op, fd);
    ts.tv_sec = left.count() / 1'000'000'000;
    ts.tv_nsec = left.count() % 1'000'000'000;
  }
  // One operation at a time and a depth of at least two: both SQEs are always available.
  io_uring_sqe* sqe = io_uring_get_sqe(&s.ring);
  prep(sqe);
  io_uring_sqe_set_data64(sqe, kOpTag);
  unsigned pending = 1;
  if (bounded) {
    sqe->flags |= IOSQE_IO_LINK;
    io_uring_sqe* t = io_uring_get_sqe(&s.ring);
    io_uring_prep_link_timeout(t, &ts, 0);
    io_uring_sqe_set_data64(t, kTimeoutTag);
    ++pending;
  }
  int rc = 0;
  do {
    rc = io_uring_submit_and_wait(&s.ring, pending);
    ++s.counters.submits;
    g_totals.submits.fetch_add(1, std::memory_order_relaxed);
  } while (rc == -EINTR);
  if (rc < 0) return errno_error(rc, fmt::format("io_uring_enter for {} on fd {}", op, fd), __FILE__, __LINE__);
  int res = 0;
  while (pending > 0) {
    io_uring_cqe* cqe = nullptr;
    if (io_uring_peek_cqe(&s.ring, &cqe) != 0) {
      ++s.counters.submits;
    g_totals.submits.fetch_add(1, std::memory_order_relaxed);
      rc = io_uring_wait_cqe(&s.ring, &cqe);
      if (rc == -EINTR) continue;
      if (rc < 0) return errno_error(rc, fmt::format("waiting for {} on fd {}", op, fd), __FILE__, __LINE__);
    }
    if (cqe->user_data == kOpTag) res = cqe->res;
    io_uring_cqe_seen(&s.ring, cqe);
    --pending;
  }
  ++s.counters.operations;
  g_totals.operations.fetch_add(1, std::memory_order_relaxed);
  // The link timeout cancels the operation, which then completes with -ECANCELED.
  OC_EXPECT(!(bounded && res == -ECANCELED), timeout, "{} on fd {} timed out", op, fd);
  if (res < 0) return errno_error(res, fmt::format("{} on fd {}", op, fd), __FILE__, __LINE__);
  return res;
}

}  // namespace

struct Ring::State : RingCore {};

Ring::Ring() : state_(new State) {}

Ring::~Ring() {
  if (state_->live) io_uring_queue_exit(&state_->ring);
  delete state_;
}

Result<Ring*> Ring::this_thread() {
  thread_local std::unique_ptr<Ring> ring;
  thread_local pid_t owner = 0;
  if (ring && owner == ::getpid()) return ring.get();
  // After a fork the child's copy of the ring shares its memory with the parent's: release the
  // child's mapping (the parent's ring lives on) and make a new one.
  ring.reset();
  owner = ::getpid();
  OC_EXPECT(ring_features().io_uring, unsupported, "io_uring is not available (kernel or seccomp)");
  std::unique_ptr<Ring> r(new Ring());
  // Every operation may need a second SQE for its linked timeout.
  const unsigned depth = std::max(defaults().io_queue_depth, 2U);
  const int rc = io_uring_queue_init(depth, &r->state_->ring, 0);
  if (rc < 0) return errno_error(rc, "io_uring_queue_init", __FILE__, __LINE__);
  r->state_->live = true;
  register_pool(*r->state_);
  ring = std::move(r);
  return ring.get();
}

Result<void> Ring::connect(int fd, const sockaddr* addr, socklen_t len, Deadline deadline) {
  OC_TRY(run_op(*state_, "connect", fd, deadline,
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
    OC_ASSIGN_OR_RETURN(const int sent, run_op(*state_, "sendmsg", fd, deadline, [&](io_uring_sqe* sqe) {
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
  if (state_->pool_registered && ring_features().recv_fixed && len > 0) {
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
  OC_ASSIGN_OR_RETURN(const int got, run_op(*state_, fixed ? "read_fixed" : "recv", fd, deadline,
                                            [&](io_uring_sqe* sqe) {
                                              if (fixed) {
                                                io_uring_prep_read_fixed(sqe, fd, dest.data(),
                                                                         static_cast<unsigned>(len), 0, index);
                                              } else {
                                                io_uring_prep_recv(sqe, fd, dest.data(), len, 0);
                                              }
                                            }));
  if (fixed) {
    ++state_->counters.fixed_reads;
    g_totals.fixed_reads.fetch_add(1, std::memory_order_relaxed);
  }
  return static_cast<size_t>(got);
}

Result<size_t> Ring::recvmsg(int fd, msghdr* msg, Deadline deadline) {
  OC_ASSIGN_OR_RETURN(const int got, run_op(*state_, "recvmsg", fd, deadline, [&](io_uring_sqe* sqe) {
                        io_uring_prep_recvmsg(sqe, fd, msg, 0);
                      }));
  return static_cast<size_t>(got);
}

const RingCounters& Ring::counters() const noexcept { return state_->counters; }

}  // namespace oc::net

namespace oc::net {

RingCounters ring_totals() noexcept {
  RingCounters c;
  c.submits = g_totals.submits.load(std::memory_order_relaxed);
  c.operations = g_totals.operations.load(std::memory_order_relaxed);
  c.fixed_reads = g_totals.fixed_reads.load(std::memory_order_relaxed);
  return c;
}

}  // namespace oc::net
