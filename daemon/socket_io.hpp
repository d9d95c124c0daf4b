// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief onecopyd's side of a client socket: packets in (with the descriptors they carry), and
/// an outbox of packets out that the event loop sends as the socket takes them.
///
/// Nothing here blocks. A reply is queued, not sent: a client slow to read leaves packets in its
/// outbox, and the loop stops reading that client's requests while the outbox is over its
/// limit, so a client that never reads holds a bounded amount of the daemon's memory and
/// nothing else (daemon_client_max_queued_bytes).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "config/error.hpp"
#include "config/fd.hpp"

namespace oc::daemon {

/// One packet as received.
struct Packet {
  size_t bytes = 0;        ///< its length (in the caller's buffer)
  bool truncated = false;  ///< larger than the buffer (MSG_TRUNC): the rest is lost
  bool fds_lost = false;   ///< descriptors came that could not be received (MSG_CTRUNC)
  UniqueFd fd;             ///< the first descriptor it carried; any others are closed
  bool eof = false;        ///< the peer closed the connection
};

/// Receives one packet from @p sock into @p buf without blocking. @return nullopt when nothing is
/// waiting; `io` for a failed receive. Retries EINTR.
[[nodiscard]] Result<std::optional<Packet>> receive_packet(int sock, std::span<uint8_t> buf);

/// Packets waiting to be sent to one client, in order.
class Outbox {
 public:
  /// Queues @p frame, as Parts when it is larger than a packet (daemon/wire.hpp), with @p fd
  /// (not owned; it must stay open until sent) attached to its last packet, and @p on_sent run
  /// once that packet has gone.
  void push(std::vector<uint8_t> frame, int fd = -1, std::function<void()> on_sent = {});
  /// Sends what the socket takes now; a full socket leaves the rest queued. @return false when
  /// the peer has hung up (the connection reset: nothing more can reach it), `io` when the
  /// socket is broken otherwise.
  [[nodiscard]] Result<bool> flush(int sock);
  [[nodiscard]] bool empty() const noexcept { return queue_.empty(); }
  /// Bytes queued.
  [[nodiscard]] uint64_t bytes() const noexcept { return bytes_; }

 private:
  struct Entry {
    std::vector<uint8_t> packet;
    int fd = -1;
    std::function<void()> on_sent;
  };
  std::deque<Entry> queue_;
  uint64_t bytes_ = 0;
};

}  // namespace oc::daemon
