// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief Socket connect, send and receive with deadlines, as io_uring operations.
///
/// Every network operation of the client runs through a ring. On a reactor's fiber
/// (net/reactor.hpp) it is queued on the reactor's ring and the fiber is suspended until it
/// completes, so many requests share one thread; on any other thread it runs on that thread's
/// own ring and blocks it. Each operation is one SQE linked to an `IORING_OP_LINK_TIMEOUT`, so a
/// deadline cancels it in the kernel and returns `Errc::timeout`. Capabilities are probed once
/// per process (`ring_features()`); a missing feature is degraded around, never an error.
#pragma once

#include <sys/socket.h>
#include <sys/uio.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "config/error.hpp"

namespace oc::net {

using Clock = std::chrono::steady_clock;
using Deadline = Clock::time_point;

/// What the kernel's io_uring (and TLS stack) offers, probed once.
struct RingFeatures {
  bool io_uring = false;               ///< a ring can be created at all
  bool registered_buffers = false;     ///< io_uring_register_buffers works on the pool
  bool provided_buffer_rings = false;  ///< IORING_REGISTER_PBUF_RING (5.19)
  bool multishot_recv = false;         ///< IORING_RECV_MULTISHOT (6.0)
  bool recv_fixed = false;             ///< READ_FIXED on a socket receives into a registered buffer
  bool ktls = false;                   ///< setsockopt(TCP_ULP, "tls") succeeds (CONFIG_TLS)
  /// @return "io_uring registered_buffers !ktls ...", for logs and `onecopy status`.
  [[nodiscard]] std::string describe() const;
};

/// @return the process-wide probe result (computed on first call, thread-safe).
[[nodiscard]] const RingFeatures& ring_features();

/// Counters of one ring, readable by its owner thread.
struct RingCounters {
  uint64_t submits = 0;      ///< io_uring_enter calls
  uint64_t operations = 0;   ///< SQEs completed (not counting link timeouts)
  uint64_t fixed_reads = 0;  ///< receives that landed in a registered buffer
};

/// @return the sums over every ring of the process (for benchmarks: syscalls per GiB).
[[nodiscard]] RingCounters ring_totals() noexcept;

/// The calling thread's ring. Not thread-safe: use only from the thread that obtained it.
class Ring {
 public:
  /// @return this thread's ring (its io_uring is made on the first operation off a reactor).
  ///         Operations fail with `Errc::unsupported` without io_uring.
  [[nodiscard]] static Result<Ring*> this_thread();

  /// Non-blocking-style connect through the ring (IORING_OP_CONNECT).
  [[nodiscard]] Result<void> connect(int fd, const sockaddr* addr, socklen_t len,
                                     Deadline deadline);
  /// Sends all of @p pieces (IORING_OP_SENDMSG, resubmitted on short writes).
  [[nodiscard]] Result<void> send_all(int fd, std::span<const iovec> pieces, Deadline deadline);
  /// Receives at most @p dest.size() bytes; 0 means orderly EOF. On a reactor, when @p dest lies
  /// inside the registered destination pool and the kernel supports it, uses READ_FIXED (no page
  /// pinning per call); otherwise IORING_OP_RECV. Plain threads' rings never register the pool.
  [[nodiscard]] Result<size_t> recv(int fd, std::span<std::byte> dest, Deadline deadline);
  /// Waits until @p fd is ready for @p events (POLLIN, POLLOUT; IORING_OP_POLL_ADD), for
  /// OpenSSL calls on a non-blocking socket BIO (the kTLS handshake).
  [[nodiscard]] Result<void> poll(int fd, short events, Deadline deadline);
  /// IORING_OP_RECVMSG, for kTLS record types in control messages.
  [[nodiscard]] Result<size_t> recvmsg(int fd, msghdr* msg, Deadline deadline);

  /// Counters of the ring the calling code's operations run on (its reactor's, on a fiber).
  [[nodiscard]] const RingCounters& counters() const noexcept;

  ~Ring();
  Ring(const Ring&) = delete;
  Ring& operator=(const Ring&) = delete;

 private:
  Ring();
  template <class F>
  [[nodiscard]] Result<int> run(const char* op, int fd, Deadline deadline, const F& prep);
  [[nodiscard]] bool pool_registered() const noexcept;
  struct State;
  State* state_;
};

}  // namespace oc::net
