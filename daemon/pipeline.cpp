// SPDX-License-Identifier: Apache-2.0
// The batch pipeline: each session's front scan is decoded on the decode pool, one batch at a
// time, up to daemon_client_max_batches_in_flight ahead of what was sent. Decoders allocate in
// the session's slabs (daemon/slab_arena.hpp), so a batch is mostly sent from where it was
// decoded; the buffers it keeps from elsewhere are copied into its slab by the decode job. A
// batch that cannot settle in place (no slab had room) is placed in a range of a slab here,
// on the loop thread, copied there on a worker, and sent. Slabs come out of one pool
// (daemon_pool_bytes), of which one user may hold daemon_uid_max_pool_bytes: a batch that finds
// no room closes an idle connection that holds slabs, else waits for a Release, for at most
// daemon_pool_wait_ms, and never takes the pool past its limit.
#include <algorithm>

#include "config/log.hpp"
#include "daemon/server.hpp"
#include "format/scan_request.hpp"

namespace oc::daemon {
namespace {

struct Decoded {
  std::optional<BatchLayout> layout;  // none: the scan's end
  std::optional<InPlace> in_place;    // where it was settled, if it could be
  uint64_t settle_ns = 0;
  format::UnitPosition position;
  format::ScanStats stats;  // the reader's, after this batch
};

uint64_t ns(Clock::duration d) {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(d).count());
}

}  // namespace

void Server::decode_ahead(Session& s, const ScanPtr& scan) {
  if (scan->busy || scan->unplaced || scan->finished ||
      scan->ready.size() >= cfg_.daemon_client_max_batches_in_flight) {
    return;
  }
  if (!scan->ready.empty() &&
      scan->ready_bytes + s.bytes_in_flight >= cfg_.daemon_client_max_bytes_in_flight) {
    return;
  }
  if (scan->device < 0) make_room_to_decode(s, *scan);  // device batches are not decoded into slabs
  scan->busy = true;
  run_job<Decoded>(
      decode_, s,
      [scan, fetched = counters_.fetched, arena = s.arena]() -> Result<Decoded> {
        // A failed allocation in the decoder surfaces here as this scan's error (run_job).
        // A device scan's batches go to device slabs: its host decodes stay off the host slabs.
        format::ArenaScope in_slabs(scan->device < 0 ? arena.get() : nullptr);
        const uint64_t before = scan->scan->stats().bytes_read;
        auto next = scan->scan->next();
        *fetched += scan->scan->stats().bytes_read - before;
        if (!next.ok()) return std::move(next.error());
        Decoded d;
        d.position = format::position_after(*scan->scan);
        d.stats = scan->scan->stats();
        if (*next) {
          d.layout = lay_out(std::move(**next));
          if (scan->device < 0) {
            const uint64_t start = format::monotonic_ns();
            d.in_place = settle_in_place(*d.layout, *arena);
            d.settle_ns = format::monotonic_ns() - start;
          }
        }
        return d;
      },
      [this, scan](Session* s, Result<Decoded> d) {
        scan->busy = false;
        if (!s || scan->dropped) return;
        mark(*s);
        if (d.ok()) format::set_reader_stages(scan->profile, d->stats);
        if (!d.ok() || !d->layout) {  // the scan's end or error
          scan->finished = true;
          scan->ready.push_back(
              Produced{std::nullopt, d.ok() ? std::nullopt : std::optional(d.error())});
          return;
        }
        scan->last_batch_bytes = d->layout->pinned;
        if (d->in_place) {
          Placed p;
          p.slab = std::move(d->in_place->slab);
          p.offset = d->in_place->offset;
          p.layout = std::move(*d->layout);
          p.in_place = true;
          p.hold = std::move(d->in_place->hold);
          p.copied = d->in_place->copied;
          p.copied_after_decode = d->in_place->copied_after_decode;
          p.in_place_bytes = d->in_place->in_place;
          p.copy_ns = d->settle_ns;
          p.position = d->position;
          count_copies(*scan, p);
          scan->ready_bytes += p.layout.pinned;
          scan->ready.push_back(Produced{std::move(p), std::nullopt});
          return;
        }
        scan->unplaced = std::move(d->layout);
        scan->unplaced_position = d->position;
        place(*s, scan);
      });
}

// Decoders allocate in the session's slabs: before a decode, the session gets a slab when it
// has none, or when the last decodes found no room in them (took from the heap), little is
// free, and the scan's batches are small enough to settle in a slab at all; within the pool's
// limits, like any slab.
void Server::make_room_to_decode(Session& s, const ActiveScan& scan) {
  const uint64_t free = s.arena->free_bytes();
  const bool none = free == 0;
  const bool wanting = s.arena->heap_bytes() > s.arena_heap_seen &&
                       free < cfg_.daemon_slab_bytes / 2 &&
                       scan.last_batch_bytes <= cfg_.daemon_slab_bytes / 2;
  if (!none && !wanting) return;
  s.arena_heap_seen = s.arena->heap_bytes();
  auto made = pool_.make(s, cfg_.daemon_slab_bytes, /*dedicated=*/false, !out_of_descriptors());
  if (!made.ok()) {  // the copying path meets the same limit and reports it
    log::get().debug("no slab to decode into for client pid {}: {}", s.peer.pid,
                     made.error().message());
  }
}

// A client library keeps connections whose scans ran to their end for its next scans
// (client/remote/client.cpp IdleConns), so that their slab pages, already faulted in, serve
// again. Such a connection holds its slabs while nothing uses them: when a batch finds no room,
// the daemon hangs up on one, and that client connects anew for its next scan.
bool Server::close_idle(const Session& waiting, const ActiveScan& scan) {
  const bool any_user =
      scan.device >= 0 ||
      pool_.bytes() + Slab::footprint(std::max(scan.unplaced ? scan.unplaced->bytes : 0,
                                               cfg_.daemon_slab_bytes)) >
          cfg_.daemon_pool_bytes;
  Session* pick = nullptr;
  for (auto& [serial, other] : sessions_) {
    Session& o = *other;
    const bool holds = scan.device >= 0 ? !o.device_slabs.empty() : !o.slabs.empty();
    if (&o == &waiting || o.closed || !holds || !o.idle()) continue;
    const bool mine = o.peer.uid == waiting.peer.uid;
    if (!mine && !any_user) continue;
    if (!pick || (mine && pick->peer.uid != waiting.peer.uid)) pick = &o;
  }
  if (!pick) return false;
  log::get().debug(
      "closing an idle connection of client pid {} ({} slabs) for a batch of client "
      "pid {} that found no room",
      pick->peer.pid, pick->slabs.size() + pick->device_slabs.size(), waiting.peer.pid);
  close(*pick, "");
  return true;
}

void Server::count_copies(ActiveScan& scan, const Placed& p) {
  counters_.bytes_copied += p.copied;  // counted whether or not it is ever sent
  counters_.bytes_copied_after_decode += p.copied_after_decode;
  scan.profile.copy_ns += p.copy_ns;
}

void Server::fail_scan(Session& s, const ScanPtr& scan, Error e) {
  scan->unplaced.reset();
  scan->finished = true;
  scan->ready.push_back(Produced{std::nullopt, std::move(e)});
  pool_.stop_waiting(s.serial);
}

// Finds a range for the scan's decoded batch: first fit in the session's slabs, else a new slab
// (of the batch's own size when it is larger than daemon_slab_bytes) when the pool has room.
void Server::place(Session& s, const ScanPtr& scan) {
  if (!scan->unplaced || scan->busy) return;
  const uint64_t need = scan->unplaced->bytes;
  if (need > cfg_.daemon_client_max_bytes_in_flight || need > cfg_.daemon_uid_max_pool_bytes) {
    fail_scan(
        s, scan,
        OC_ERROR(Errc::invalid,
                 "a batch of {} bytes is more than a client may hold "
                 "(daemon_client_max_bytes_in_flight {}, daemon_uid_max_pool_bytes {}); "
                 "scan with a smaller batch_rows",
                 need, cfg_.daemon_client_max_bytes_in_flight, cfg_.daemon_uid_max_pool_bytes));
    return;
  }
  Placed p;
  if (need > 0) {
    auto found = pool_.find_range(s, *scan, need, p, !out_of_descriptors());
    while (found.ok() && !*found && close_idle(s, *scan)) {
      found = pool_.find_range(s, *scan, need, p, !out_of_descriptors());
    }
    if (!found.ok()) {
      fail_scan(s, scan, std::move(found.error()));
      return;
    }
    if (!*found) {  // no room: wait for a Release here or elsewhere (expire() bounds the wait)
      if (scan->waiting_since == Clock::time_point{}) scan->waiting_since = Clock::now();
      pool_.wait(s.serial);
      return;
    }
  }
  if (scan->waiting_since != Clock::time_point{}) {
    scan->profile.pool_wait_ns += ns(Clock::now() - scan->waiting_since);
    scan->waiting_since = {};
  }
  pool_.stop_waiting(s.serial);
  p.layout = std::move(*scan->unplaced);
  p.position = scan->unplaced_position;
  scan->unplaced.reset();
  if (!p.slab && !p.device_slab) {
    scan->ready.push_back(Produced{std::move(p), std::nullopt});
    return;
  }
  scan->busy = true;
  auto job = std::make_shared<Placed>(std::move(p));
  run_job<bool>(
      decode_, s,
      [job]() -> Result<bool> {
        // Writes only inside the range the loop gave this job; the slab outlives it (shared).
        const uint64_t start = format::monotonic_ns();
        if (job->device_slab) {  // device to device: the batch was decoded on the same GPU
          OC_ASSIGN_OR_RETURN(
              job->copied, copy_batch_to_device(job->layout, job->device_slab->base() + job->offset,
                                                job->device_slab->device()));
          job->copy_ns = format::monotonic_ns() - start;
          return true;
        }
        for (const auto& [at, b] : job->layout.copies) {
          if (SlabArena::decoded_here(*b)) job->copied_after_decode += b->size();
        }
        job->copied = copy_batch(job->layout, job->slab->base() + job->offset);
        job->copy_ns = format::monotonic_ns() - start;
        return true;
      },
      [this, scan, job](Session* s, Result<bool> copied) {
        scan->busy = false;
        count_copies(*scan, *job);
        if (!s) return;  // the slab went with the session
        mark(*s);
        if (scan->dropped || !copied.ok()) {
          if (job->device_slab) {
            pool_.give_back(job->device_slab, job->offset);
          } else {
            pool_.give_back(*s, job->slab, job->offset);
          }
          if (!scan->dropped) {
            scan->finished = true;
            scan->ready.push_back(Produced{std::nullopt, copied.error()});
          }
          return;
        }
        scan->ready_bytes += job->layout.pinned;
        scan->ready.push_back(Produced{std::move(*job), std::nullopt});
      });
}

// Frees a range; a dedicated slab goes with its one batch.
// Drops a scan and the ranges of its batches not yet sent; a job still running on it gives its
// own range back when it completes.
void Server::drop_scan(Session& s, const ScanPtr& scan) {
  scan->dropped = true;
  remember_scan(s, *scan, "cancelled");
  for (const Produced& p : scan->ready) {
    if (p.batch && p.batch->slab && !p.batch->in_place)
      pool_.give_back(s, p.batch->slab, p.batch->offset);
    if (p.batch && p.batch->device_slab) pool_.give_back(p.batch->device_slab, p.batch->offset);
  }
  scan->ready.clear();
  scan->ready_bytes = 0;
  if (scan->unplaced) pool_.stop_waiting(s.serial);
  scan->unplaced.reset();
  std::erase(s.scans, scan);
}

// Queues the Batch message for a placed batch, after its slab's descriptor if this is the
// slab's first batch; the descriptor is closed once it has been sent.
void Server::send_batch(Session& s, ActiveScan& scan, Placed& b) {
  if (b.slab && !b.slab->sent) {
    flatbuffers::FlatBufferBuilder fbb;
    auto added = fbs::CreateSlabAdded(fbb, b.slab->id(), b.slab->bytes(), b.slab->dedicated());
    fbb.Finish(fbs::CreateMessage(fbb, fbs::Body::SlabAdded, added.Union()));
    send(s, fbb, b.slab->fd(), [slab = b.slab] { slab->close_fd(); });
    b.slab->sent = true;
    ++counters_.slabs_sent;
  }
  if (b.device_slab && !b.device_slab->sent) {
    flatbuffers::FlatBufferBuilder fbb;
    const bool vmm = b.device_slab->kind() == kernels::ShareKind::vmm;
    const auto& handle = b.device_slab->ipc_handle();
    const std::vector<uint8_t> ipc =
        vmm ? std::vector<uint8_t>{} : std::vector<uint8_t>(handle.begin(), handle.end());
    auto added = fbs::CreateDeviceSlabAddedDirect(fbb, b.device_slab->id(), b.device_slab->bytes(),
                                                  b.device_slab->device(), &ipc);
    fbb.Finish(fbs::CreateMessage(fbb, fbs::Body::DeviceSlabAdded, added.Union()));
    send(s, fbb, vmm ? b.device_slab->fd() : -1, [slab = b.device_slab] { slab->close_fd(); });
    b.device_slab->sent = true;
    ++counters_.slabs_sent;
  }
  flatbuffers::FlatBufferBuilder fbb;
  std::vector<flatbuffers::Offset<fbs::ArrayNode>> arrays;
  std::vector<fbs::BufferRef> bufs;
  for (const SlabArray& a : b.layout.arrays) {
    bufs.clear();
    for (const fbs::BufferRef& r : a.buffers) {
      bufs.emplace_back(r.offset() + b.offset, r.length(), r.present());
    }
    arrays.push_back(
        fbs::CreateArrayNodeDirect(fbb, a.length, a.null_count, a.offset, &bufs, a.n_children));
  }
  const uint64_t lease = next_id_++;
  const uint64_t pinned = b.layout.pinned;
  const uint64_t slab_id = b.device_slab ? b.device_slab->id() : b.slab ? b.slab->id() : 0;
  auto msg = fbs::CreateBatchDirect(fbb, scan.id, lease, b.layout.rows, b.layout.bytes, &arrays,
                                    b.position.unit, b.position.rows, slab_id, b.offset, pinned,
                                    scan.device);
  fbb.Finish(fbs::CreateMessage(fbb, fbs::Body::Batch, msg.Union()));
  send(s, fbb);
  s.leases[lease] =
      Session::Lease{b.slab, b.device_slab, b.offset, pinned, b.in_place, std::move(b.hold)};
  s.bytes_in_flight += pinned;
  const uint64_t delivered = b.copied + b.in_place_bytes;
  counters_.bytes_delivered += delivered;
  counters_.bytes_in_place += b.in_place_bytes;
  counters_.batches_delivered += 1;
  counters_.delivered_rate.add(
      std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - started_).count(), delivered);
  scan.profile.rows += b.layout.rows;
  scan.profile.batches += 1;
  scan.bytes += delivered;
}

void Server::serve(Session& s) {
  while (!s.scans.empty()) {
    const ScanPtr scan = s.scans.front();
    while (!scan->ready.empty()) {
      Produced& p = scan->ready.front();
      if (p.batch) {
        if (!s.leases.empty() && (s.leases.size() >= cfg_.daemon_client_max_batches_in_flight ||
                                  s.bytes_in_flight >= cfg_.daemon_client_max_bytes_in_flight)) {
          // Backpressure: wait for a Release; the wait is the consumer's.
          if (scan->blocked_since == Clock::time_point{}) scan->blocked_since = Clock::now();
          break;
        }
        if (scan->blocked_since != Clock::time_point{}) {
          scan->profile.consumer_wait_ns += ns(Clock::now() - scan->blocked_since);
          scan->blocked_since = {};
        }
        send_batch(s, *scan, *p.batch);
        scan->ready_bytes -= p.batch->layout.pinned;
        scan->ready.pop_front();
        continue;
      }
      s.scans.pop_front();
      remember_scan(s, *scan, p.error ? "failed" : "done");
      if (p.error) {
        send_error(s, scan->id, *p.error);
        break;
      }
      flatbuffers::FlatBufferBuilder fbb;
      const format::ScanProfile& f = scan->profile;
      auto end = fbs::CreateScanEnd(fbb, scan->id, f.rows, f.batches, scan->bytes, f.storage_ns,
                                    f.decode_ns, f.copy_ns, f.consumer_wait_ns, f.pool_wait_ns,
                                    f.bytes_read);
      fbb.Finish(fbs::CreateMessage(fbb, fbs::Body::ScanEnd, end.Union()));
      send(s, fbb);
      break;
    }
    if (!s.scans.empty() && s.scans.front() == scan) {
      place(s, scan);  // a Release may have made room
      decode_ahead(s, scan);
      return;
    }
  }
}

}  // namespace oc::daemon
