// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief One client connection's state in onecopyd: what it has open, what it is scanning, the
/// slabs and leases it holds, and the packets waiting for its socket.
///
/// Sessions belong to the `Server` and are touched on the loop thread only. A job on a worker
/// refers to its session by serial number and finds it again (or finds it gone) when it
/// completes; a scan in progress is shared with the one job working on it.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "config/error.hpp"
#include "config/fd.hpp"
#include "daemon/access.hpp"
#include "daemon/device_slab.hpp"
#include "daemon/epoll.hpp"
#include "daemon/slab.hpp"
#include "daemon/slab_arena.hpp"
#include "daemon/socket_io.hpp"
#include "daemon/wire.hpp"
#include "format/reader.hpp"
#include "format/scan_profile.hpp"
#include "format/shard.hpp"

namespace oc::daemon {

using Clock = std::chrono::steady_clock;

/// A batch in its range of one of the client's slabs (no slab: a batch of no bytes): copied
/// there, or decoded there and settled in place (daemon/slab_arena.hpp).
struct Placed {
  std::shared_ptr<Slab> slab;
  std::shared_ptr<DeviceSlab> device_slab;  ///< a device scan's batch: its range is here instead
  uint64_t offset = 0;
  BatchLayout layout;
  bool in_place = false;  ///< the range is not the loop's to give back: `hold` keeps it
  std::vector<std::shared_ptr<const void>> hold;
  uint64_t copied = 0;               ///< bytes copied into the slab
  uint64_t copied_after_decode = 0;  ///< of those, decoder output that lay elsewhere
  uint64_t in_place_bytes = 0;       ///< bytes sent from where they were decoded
  uint64_t copy_ns = 0;              ///< the copy into the slab took this long
  format::UnitPosition position;     ///< a sharded scan's, just after this batch
};

/// What a scan has ready to send, in order: a placed batch, or the scan's end (neither), or its
/// error.
struct Produced {
  std::optional<Placed> batch;
  std::optional<Error> error;
};

struct ActiveScan {
  uint64_t id = 0;
  int32_t device = -1;  ///< the CUDA device its batches are delivered on; -1: host slabs
  std::shared_ptr<format::VortexFile> file;
  /// Only the one decode job in flight touches the scan; the loop never does.
  std::unique_ptr<format::Scan> scan;
  std::deque<Produced> ready;  ///< decoded ahead, in scan order
  uint64_t ready_bytes = 0;
  std::optional<BatchLayout> unplaced;  ///< decoded, waiting for room in a slab
  format::UnitPosition unplaced_position;
  Clock::time_point waiting_since{};  ///< when `unplaced` began to wait for room in the pool
  bool busy = false;                  ///< a decode or copy job is running
  bool finished = false;              ///< its end or error is in `ready`
  bool dropped = false;               ///< cancelled: a copy job that finishes gives its range back
  uint64_t bytes = 0;                 ///< Arrow buffer bytes sent
  uint64_t last_batch_bytes = 0;      ///< the latest decoded batch's (`BatchLayout::pinned`)
  /// Its stages so far (format/scan_profile.hpp): the reader's as of its latest batch, the
  /// rest timed by the loop.
  format::ScanProfile profile;
  Clock::time_point started = Clock::now();
  Clock::time_point blocked_since{};  ///< when a ready batch began to wait for a Release
};
/// Shared with a running decode job, so that Cancel or a disconnect may drop it at any time.
using ScanPtr = std::shared_ptr<ActiveScan>;

struct Session {
  Session(UniqueFd socket, uint64_t serial, Peer peer, size_t max_message_bytes)
      : fd(std::move(socket)), serial(serial), peer(std::move(peer)), parts(max_message_bytes) {}

  UniqueFd fd;
  uint64_t serial;  ///< tells a completion whether its session is still there
  Peer peer;
  Outbox out;
  PartAssembler parts;
  bool said_hello = false;
  bool closed = false;        ///< disconnected; the loop frees it after this turn
  uint32_t epoll_events = 0;  ///< what the loop asked epoll for, last
  bool dirty = false;         ///< queued for `Server::service` this turn
  bool touched = false;       ///< queued for the loop to send its outbox this turn
  Watch watch;                ///< what the loop runs when its socket is ready

  std::map<uint64_t, std::shared_ptr<format::VortexFile>> files;
  std::multiset<uint64_t> opening;  ///< Open request ids whose reply is still wanted
  uint32_t opens_running = 0;       ///< Open jobs on the workers, cancelled ones included
  uint32_t jobs_running = 0;        ///< Open, List and plan jobs on the workers
  std::deque<ScanPtr> scans;        ///< served in order, the front one only
  uint32_t planning = 0;            ///< Scans being planned on a worker (they count as active)

  /// This connection's slabs, by id; only ever this client's batches are placed in them.
  std::map<uint64_t, std::shared_ptr<Slab>> slabs;
  /// Its device slabs (daemon/device_slab.hpp), by id, for device scans.
  std::map<uint64_t, std::shared_ptr<DeviceSlab>> device_slabs;
  /// Its non-dedicated slabs, which its scans decode into.
  std::shared_ptr<SlabArena> arena = std::make_shared<SlabArena>();
  uint64_t arena_heap_seen = 0;  ///< `arena->heap_bytes()` when a slab was last added for room
  struct Lease {
    std::shared_ptr<Slab> slab;               ///< null for a batch of no bytes
    std::shared_ptr<DeviceSlab> device_slab;  ///< a device batch's, instead of `slab`
    uint64_t offset = 0, bytes = 0;
    bool in_place = false;  ///< its ranges go back as `hold` goes, not by `give_back`
    std::vector<std::shared_ptr<const void>> hold;
  };
  std::map<uint64_t, Lease> leases;
  uint64_t bytes_in_flight = 0;

  /// The latest List expansion, served in parts as the client asks for them.
  std::string listed_pattern;
  std::vector<std::string> listed;

  /// Nothing of it is in use: no file open, no Open, List, plan or scan running, no batch
  /// leased; what a connection kept by the client library for a later scan looks like.
  [[nodiscard]] bool idle() const noexcept {
    return files.empty() && opening.empty() && opens_running == 0 && jobs_running == 0 &&
           scans.empty() && planning == 0 && leases.empty();
  }
};

}  // namespace oc::daemon
