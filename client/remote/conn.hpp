// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief The client library's connection to onecopyd: framing (with Parts both ways),
/// descriptors, timeouts, and the rules that keep a process from disturbing another's.
///
/// - Every wait is bounded: connecting by `client_connect_timeout_ms` (onecopyd may be busy or
///   at its descriptor limit and not accepting), each reply or batch by
///   `client_reply_timeout_ms` (0: forever). A signal (EINTR) never fails a call.
/// - No send raises SIGPIPE (MSG_NOSIGNAL): a daemon that went away is an `io` error,
///   "daemon connection lost".
/// - A connection belongs to the process that opened it: in a forked child (a DataLoader
///   worker, say) every send and receive fails, so a child can never release, cancel or read
///   its parent's leases and scans.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "config/error.hpp"
#include "config/fd.hpp"
#include "daemon/protocol_generated.h"
#include "daemon/wire.hpp"

namespace oc::client {

/// One of the connection's slabs, mapped read-only once; unmapped when the connection and every
/// batch in it are gone. A device slab (`DeviceSlabAdded`) is mapped in GPU memory instead:
/// `device_memory` owns that mapping (kernels::SharedDeviceMemory) and `base` points into it.
struct MappedSlab {
  void* base = nullptr;
  uint64_t bytes = 0;
  bool dedicated = false;
  std::shared_ptr<void> device_memory;
  ~MappedSlab();
};

class Conn {
 public:
  /// Connects to the daemon at @p socket and says Hello.
  [[nodiscard]] static Result<std::shared_ptr<Conn>> open(const std::string& socket);
  ~Conn() = default;
  Conn(const Conn&) = delete;
  Conn& operator=(const Conn&) = delete;

  /// Sends the finished message in @p fbb (as Parts when it is larger than a packet), with
  /// @p fd attached when it is not -1. Thread-safe: batches are released from any thread.
  [[nodiscard]] Result<void> send(flatbuffers::FlatBufferBuilder& fbb, int fd = -1);
  /// Receives the next message, joining Parts; a descriptor that came with it goes to @p fd
  /// (closed when @p fd is null). An `Error` from the daemon is returned as an error of its
  /// code. The message points into this connection and is valid until the next recv.
  [[nodiscard]] Result<const daemon::fbs::Message*> recv(int* fd);

  /// True when nothing is waiting on the socket and the daemon has not hung up: a connection
  /// fit for the next scan.
  [[nodiscard]] bool quiet() const;
  /// True when the daemon will send no more batches until some are released (its backpressure
  /// rule, daemon/PROTOCOL.md) and nothing is waiting on the socket: a receive would wait
  /// forever.
  [[nodiscard]] bool starved() const;
  /// True when more than one batch is unreleased and they (or their bytes) are more than half
  /// the daemon's limits: the client copies further batches out and releases them at once, so
  /// a consumer that keeps batches never starves its scan (under a limit of one batch it does).
  [[nodiscard]] bool past_half_limit() const;
  /// Whether this process opened the connection (false in a forked child).
  [[nodiscard]] bool ours() const;

  /// The daemon's slabs for this connection, mapped as SlabAdded named them; read and written
  /// only by the stream using the connection.
  std::map<uint64_t, std::shared_ptr<MappedSlab>> slabs;
  /// Unreleased batches of this connection and their slab bytes, against the daemon's limits
  /// from HelloReply (0: unknown).
  std::atomic<uint64_t> held_batches{0}, held_bytes{0};
  uint64_t max_batches = 0, max_bytes = 0;

 private:
  explicit Conn(UniqueFd fd);
  Result<void> wait_readable() const;

  UniqueFd fd_;
  const pid_t pid_;
  std::mutex send_mu_;
  std::vector<uint8_t> buf_, joined_;
  daemon::PartAssembler parts_;
};

}  // namespace oc::client
