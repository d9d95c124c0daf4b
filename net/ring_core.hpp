// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief Private to net/: the io_uring instance behind a `Ring` (one thread's blocking ring) or
/// a `Reactor` (a loop multiplexing many fibers), and the pieces both share.
#pragma once

#include <liburing.h>

#include "config/error.hpp"
#include "net/ring.hpp"

namespace oc::net::detail {

/// Fills one SQE; @p ctx is the caller's closure (ring.cpp adapts lambdas to this).
using PrepFn = void (*)(io_uring_sqe* sqe, const void* ctx);

// user_data of an operation's CQEs: the address of its record (8-aligned) with a tag in the low
// bits. 0 is the reactor's own wake-up read.
constexpr uint64_t kOpTag = 1;
constexpr uint64_t kTimeoutTag = 2;
constexpr uint64_t kTagMask = 7;

struct RingCore {
  io_uring ring{};
  bool live = false;
  bool pool_registered = false;
  RingCounters counters;

  /// Creates the ring with @p flags, falling back to fewer flags on kernels that refuse them
  /// (SINGLE_ISSUER and DEFER_TASKRUN need 6.1), and registers the buffer pool if @p with_pool.
  [[nodiscard]] Result<void> init(unsigned sq_entries, unsigned cq_entries, unsigned flags,
                                  bool with_pool);
  ~RingCore();

  void count_submit() noexcept;
  void count_operation() noexcept;
  void count_fixed_read() noexcept;
};

/// The deadline of an operation as a link-timeout timespec; `Errc::timeout` when already past.
[[nodiscard]] Result<__kernel_timespec> timeout_spec(Deadline deadline, const char* op, int fd);

/// Maps a completed operation's result (after its link timeout) to what Ring's callers expect:
/// `Errc::timeout` when the deadline cancelled it, an errno error when negative.
[[nodiscard]] Result<int> op_result(int res, bool bounded, const char* op, int fd);

}  // namespace oc::net::detail
