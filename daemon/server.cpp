// SPDX-License-Identifier: Apache-2.0
// Sessions and the dispatch of every request. The jobs that run on the workers are in
// daemon/jobs.cpp, the batch pipeline in daemon/pipeline.cpp.
#include "daemon/server.hpp"

#include <unistd.h>

#include <algorithm>

#include "config/log.hpp"
#include "daemon/scan_wire.hpp"
#include "daemon/wire.hpp"
#include "format/byte_cache.hpp"
#include "format/metadata_cache.hpp"
#include "format/segment_source.hpp"
#include "net/s3_source.hpp"
#include "onecopy_build_config.h"

namespace oc::daemon {

Server::Server(Defaults cfg, AccessPolicy policy, Workers& io, Workers& decode)
    : cfg_(std::move(cfg)),
      policy_(std::move(policy)),
      io_(io),
      decode_(decode),
      started_(Clock::now()) {}

Server::~Server() = default;

Session* Server::find(uint64_t serial) {
  auto it = sessions_.find(serial);
  return it == sessions_.end() ? nullptr : it->second.get();
}

void Server::mark(Session& s) {
  if (s.dirty || s.closed) return;
  s.dirty = true;
  dirty_.push_back(&s);
}

void Server::touch(Session& s) {
  if (s.touched) return;
  s.touched = true;
  touched_.push_back(&s);
}

uint64_t Server::descriptors() const {
  // Each local file is a descriptor; the io_uring rings local reads use are one per thread.
  return sessions_.size() + format::open_local_sources() + format::open_read_rings() +
         Slab::open_fds() + extra_fds_;
}

bool Server::out_of_descriptors(uint64_t extra) {
  if (descriptors() + extra < fd_budget_) return false;
  if (kept_->size() == 0) return true;
  kept_->clear();  // kept files are the first descriptors given back
  return descriptors() + extra >= fd_budget_;
}

Result<Session*> Server::admit(UniqueFd& socket, Peer peer) {
  auto refuse = [&](Error e) -> Result<Session*> {
    note_refused_connection();
    return e;
  };
  if (!policy_.may_connect(peer)) {
    return refuse(OC_ERROR(Errc::denied,
                           "uid {} gid {} is not allowed to connect (daemon_allowed_uids, "
                           "daemon_allowed_gids)",
                           peer.uid, peer.gid));
  }
  if (sessions_.size() >= cfg_.daemon_max_clients) {
    return refuse(OC_ERROR(Errc::invalid,
                           "onecopyd serves {} clients already, its limit "
                           "(daemon_max_clients)",
                           sessions_.size()));
  }
  const auto mine = sessions_by_uid_.find(peer.uid);
  const uint32_t held = mine == sessions_by_uid_.end() ? 0 : mine->second;
  if (held >= cfg_.daemon_uid_max_clients) {
    return refuse(OC_ERROR(Errc::invalid,
                           "uid {} has {} connections already, the limit per "
                           "user (daemon_uid_max_clients)",
                           peer.uid, held));
  }
  if (out_of_descriptors()) {
    return refuse(OC_ERROR(Errc::io,
                           "onecopyd holds {} descriptors for clients, its budget "
                           "(RLIMIT_NOFILE less daemon_fd_reserve)",
                           descriptors()));
  }
  const uint64_t serial = next_serial_++;
  auto s = std::make_unique<Session>(std::move(socket), serial, std::move(peer),
                                     cfg_.daemon_max_message_bytes);
  Session* raw = s.get();
  ++sessions_by_uid_[raw->peer.uid];
  sessions_[serial] = std::move(s);
  log::get().debug("client {} connected: pid {} uid {}", serial, raw->peer.pid, raw->peer.uid);
  return raw;
}

void Server::close(Session& s, std::string_view why) {
  if (s.closed) return;
  if (!why.empty()) {
    log::get().error("disconnecting client pid {} uid {}: {}{}", s.peer.pid, s.peer.uid,
                     why.substr(0, 400), why.size() > 400 ? "…" : "");
    ++counters_.errors;
  }
  log::get().debug("client pid {} gone; {} leases ({} bytes) reclaimed", s.peer.pid,
                   s.leases.size(), s.bytes_in_flight);
  s.closed = true;
  // The kernel ends every lease at once: slabs are memfds the client maps, freed when its
  // mappings go too. Jobs still running on this session's scans find them dropped.
  for (const ScanPtr& scan : s.scans) {
    scan->dropped = true;
    remember_scan(s, *scan, "cancelled");
  }
  s.scans.clear();
  s.leases.clear();
  s.files.clear();
  pool_.forget_all(s);
  if (auto it = sessions_by_uid_.find(s.peer.uid); it != sessions_by_uid_.end()) {
    if (--it->second == 0) sessions_by_uid_.erase(it);
  }
  // The last replies (the Error saying why) go if the socket takes them now; then the client
  // sees the end, and the socket leaves epoll.
  if (s.fd.valid()) (void)s.out.flush(s.fd.get());
  s.fd.reset();
  auto it = sessions_.find(s.serial);
  if (it != sessions_.end()) {
    closed_.push_back(std::move(it->second));
    sessions_.erase(it);
  }
}

void Server::reap() { closed_.clear(); }

void Server::close_all() {
  while (!sessions_.empty()) close(*sessions_.begin()->second, "");
}

std::vector<Session*> Server::take_touched() {
  std::vector<Session*> out;
  out.swap(touched_);
  for (Session* s : out) s->touched = false;
  std::erase_if(out, [](Session* s) { return s->closed; });
  return out;
}

void Server::service() {
  // Serving one session can free pool room and so mark others: run until none is left.
  while (!dirty_.empty()) {
    std::vector<Session*> batch;
    batch.swap(dirty_);
    for (Session* s : batch) {
      s->dirty = false;
      if (s->closed) continue;
      try {
        serve(*s);
      } catch (...) {
        close(*s, current_exception_error("serving its scans").describe());
      }
    }
  }
}

void Server::send(Session& s, flatbuffers::FlatBufferBuilder& fbb, int fd,
                  std::function<void()> on_sent) {
  if (s.closed) return;
  s.out.push(make_frame(fbb), fd, std::move(on_sent));
  touch(s);
}

// Errors go to the client as describe() renders them: no position in onecopyd's source.
void Server::send_error(Session& s, uint64_t request, const Error& e) {
  ++counters_.errors;
  flatbuffers::FlatBufferBuilder fbb;
  auto err = fbs::CreateErrorDirect(fbb, request, std::string(errc_name(e.code())).c_str(),
                                    e.describe().c_str());
  fbb.Finish(fbs::CreateMessage(fbb, fbs::Body::Error, err.Union()));
  send(s, fbb);
}

void Server::refuse(Session& s, uint64_t request, const Error& e) {
  ++counters_.requests_refused;
  // Bounded: a client chooses the names that errors quote, and must not flood the log with them.
  const std::string text = e.describe();
  log::get().info("client pid {} uid {}: request {} refused: {}{}", s.peer.pid, s.peer.uid, request,
                  std::string_view(text).substr(0, 400), text.size() > 400 ? "…" : "");
  send_error(s, request, e);
}

void Server::on_packet(Session& s, std::span<const uint8_t> bytes, Packet& packet) {
  if (s.closed) return;
  if (packet.truncated) {
    close(s, fmt::format("message over the {}-byte limit (daemon_max_message_bytes)",
                         cfg_.daemon_max_message_bytes));
    return;
  }
  auto msg = parse_frame(bytes, cfg_.daemon_max_message_bytes);
  std::vector<uint8_t> joined;
  if (msg.ok() && (*msg)->body_type() == fbs::Body::Part) {
    auto whole = s.parts.add(*(*msg)->body_as_Part());
    if (!whole.ok()) {
      msg = std::move(whole.error()).with_context("the limit is daemon_max_message_bytes");
    } else if (!whole->has_value()) {
      return;  // more parts to come; a descriptor comes with the last
    } else {
      joined = std::move(**whole);
      msg = parse_frame(joined, cfg_.daemon_max_message_bytes);
      bytes = joined;
      if (msg.ok() && (*msg)->body_type() == fbs::Body::Part) {
        msg = OC_ERROR(Errc::protocol, "a Part inside a Part");
      }
    }
  } else if (msg.ok() && s.parts.pending()) {
    msg = OC_ERROR(Errc::protocol, "a {} in the middle of a message in parts",
                   fbs::EnumNameBody((*msg)->body_type()));
  }
  if (!msg.ok()) {
    send_error(s, 0, msg.error());
    close(s, msg.error().describe());
    return;
  }
  // handle() fails only for a protocol violation, which ends this client; request-level
  // failures (a missing file, a limit) are Error replies instead.
  auto r = catch_all("handling a request", [&] { return handle(s, **msg, packet); });
  if (!r.ok()) {
    if (r.error().code() == Errc::protocol) send_error(s, 0, r.error());
    close(s, r.error().describe());
  }
}

Result<void> Server::check_request_room(const Session& s) const {
  OC_EXPECT(s.jobs_running < cfg_.daemon_client_max_requests, invalid,
            "this connection has {} opens, listings and scan plans running, the limit "
            "(daemon_client_max_requests)",
            s.jobs_running);
  return {};
}

Result<void> Server::handle(Session& s, const fbs::Message& m, Packet& packet) {
  OC_EXPECT(s.said_hello || m.body_type() == fbs::Body::Hello, protocol, "{} before Hello",
            fbs::EnumNameBody(m.body_type()));
  switch (m.body_type()) {
    case fbs::Body::Hello:
      return handle_hello(s, *m.body_as_Hello());
    case fbs::Body::StatusRequest: {
      flatbuffers::FlatBufferBuilder fbb;
      build_status_reply(fbb, status(&s.peer));
      send(s, fbb);
      return {};
    }
    case fbs::Body::Dataset:
      return handle_dataset(s, *m.body_as_Dataset());
    case fbs::Body::CacheClear:
      return handle_cache_clear(s, m.body_as_CacheClear()->request());
    case fbs::Body::Open:
      return handle_open(s, *m.body_as_Open(), packet);
    case fbs::Body::List:
      return handle_list(s, *m.body_as_List());
    case fbs::Body::Scan:
      return handle_scan(s, *m.body_as_Scan());
    case fbs::Body::Release:
      return handle_release(s, m.body_as_Release()->lease());
    case fbs::Body::Cancel:
      handle_cancel(s, *m.body_as_Cancel());
      return {};
    case fbs::Body::Close: {
      // Scans hold the file too, so those running on it go on to their end.
      const uint64_t file = m.body_as_Close()->file();
      OC_EXPECT(s.files.erase(file) == 1, protocol, "Close of unknown file {}", file);
      return {};
    }
    default:
      return OC_ERROR(Errc::protocol, "unexpected message type {}",
                      fbs::EnumNameBody(m.body_type()));
  }
}

Result<void> Server::handle_hello(Session& s, const fbs::Hello& h) {
  OC_EXPECT(!s.said_hello, protocol, "a second Hello");
  OC_EXPECT(h.version() == kProtocolVersion, protocol,
            "client speaks protocol {}; this onecopyd speaks {}", h.version(), kProtocolVersion);
  s.said_hello = true;
  flatbuffers::FlatBufferBuilder fbb;
  std::vector<flatbuffers::Offset<flatbuffers::String>> features{
      fbb.CreateString("scan"),    fbb.CreateString("filter"), fbb.CreateString("slab-pool"),
      fbb.CreateString("fd-open"), fbb.CreateString("parts"),  fbb.CreateString("device")};
  // Where batches can be delivered: host memory, and each CUDA device onecopyd sees.
  std::string devices = "host";
  for (int d = 0; d < gpu_.count; ++d) devices += fmt::format(",cuda:{}", d);
  auto reply = fbs::CreateHelloReplyDirect(
      fbb, kProtocolVersion, &features, devices.c_str(), "onecopyd " OC_VERSION,
      cfg_.daemon_client_max_batches_in_flight, cfg_.daemon_client_max_bytes_in_flight,
      cfg_.daemon_max_message_bytes);
  fbb.Finish(fbs::CreateMessage(fbb, fbs::Body::HelloReply, reply.Union()));
  send(s, fbb);
  return {};
}

Result<void> Server::handle_open(Session& s, const fbs::Open& o, Packet& packet) {
  OC_EXPECT(o.uri(), protocol, "Open without a uri");
  const uint64_t request = o.request();
  if (auto room = check_request_room(s); !room.ok()) {
    refuse(s, request, room.error());
    return {};
  }
  if (s.files.size() + s.opens_running >= cfg_.daemon_client_max_open_files) {
    refuse(s, request,
           OC_ERROR(Errc::invalid,
                    "this connection has {} files open, the limit "
                    "(daemon_client_max_open_files)",
                    s.files.size() + s.opens_running));
    return {};
  }
  bool public_only = false;
  if (packet.fd.valid()) {
    // A local file the client opened with its own permissions: read through its descriptor,
    // never reopened by name. The descriptor budget counts it from here.
    if (out_of_descriptors(1)) {
      refuse(s, request,
             OC_ERROR(Errc::io,
                      "onecopyd holds {} descriptors for clients, its "
                      "budget (RLIMIT_NOFILE less daemon_fd_reserve); try again "
                      "later",
                      descriptors()));
      return {};
    }
  } else if (packet.fds_lost) {
    refuse(s, request,
           OC_ERROR(Errc::io,
                    "the descriptor sent with this Open could not be "
                    "received: onecopyd is at its descriptor limit"));
    return {};
  } else {
    auto access = policy_.check_object(s.peer, o.uri()->string_view());
    if (!access.ok()) {
      refuse(s, request, access.error());
      return {};
    }
    public_only = access->public_only;
  }
  open_async(s, request, o.uri()->str(), o.unit_rows(), std::move(packet.fd), public_only);
  return {};
}

Result<void> Server::handle_list(Session& s, const fbs::List& l) {
  OC_EXPECT(l.pattern(), protocol, "List without a pattern");
  if (l.offset() > 0 && l.pattern()->str() == s.listed_pattern) {
    return send_listed(s, l.request(), l.offset());
  }
  OC_EXPECT(l.offset() == 0, protocol, "List offset {} of a pattern not listed before", l.offset());
  if (auto room = check_request_room(s); !room.ok()) {
    refuse(s, l.request(), room.error());
    return {};
  }
  if (auto access = policy_.check_list(s.peer, l.pattern()->string_view()); !access.ok()) {
    refuse(s, l.request(), access.error());
    return {};
  }
  list_async(s, l.request(), l.pattern()->str());
  return {};
}

Result<void> Server::handle_dataset(Session& s, const fbs::Dataset& d) {
  OC_EXPECT(d.pattern(), protocol, "Dataset without a pattern");
  if (auto room = check_request_room(s); !room.ok()) {
    refuse(s, d.request(), room.error());
    return {};
  }
  // An s3:// prefix or glob: anything else is refused by the index's parse, with its text.
  const std::string_view pattern = d.pattern()->string_view();
  if (auto access = policy_.check_list(s.peer, pattern); !access.ok()) {
    refuse(s, d.request(), access.error());
    return {};
  }
  dataset_async(s, d.request(), std::string(pattern), d.unit_rows(), d.footers());
  return {};
}

Result<void> Server::handle_scan(Session& s, const fbs::Scan& scan) {
  const uint64_t request = scan.request();
  auto parsed = from_fbs(scan);
  auto check = [&]() -> Result<void> {
    OC_TRY(check_request_room(s));
    OC_EXPECT(s.scans.size() + s.planning < cfg_.daemon_client_max_scans, invalid,
              "this connection has {} scans active, the limit (daemon_client_max_scans)",
              s.scans.size() + s.planning);
    OC_TRY(parsed);
    const format::ScanRequest& r = *parsed;
    OC_EXPECT(r.batch_rows <= cfg_.daemon_max_batch_rows, invalid,
              "batch_rows {} is over the limit of {} (daemon_max_batch_rows)", r.batch_rows,
              cfg_.daemon_max_batch_rows);
    OC_EXPECT(r.columns.size() <= cfg_.daemon_max_scan_columns, invalid,
              "a Scan of {} columns is over the limit of {} (daemon_max_scan_columns)",
              r.columns.size(), cfg_.daemon_max_scan_columns);
    if (const auto* g = std::get_if<format::RangeSelection>(&r.selection)) {
      OC_EXPECT(g->ranges.size() <= defaults().plan_max_pieces, invalid,
                "a Scan of {} ranges is over the limit of {} (plan_max_pieces)", g->ranges.size(),
                defaults().plan_max_pieces);
    }
    OC_EXPECT(r.device >= format::kHostDevice, invalid,
              "the host reference of a device scan runs in the client's own process");
    OC_EXPECT(s.files.count(scan.file()) == 1, invalid, "no open file {}", scan.file());
    return {};
  };
  if (auto ok = check(); !ok.ok()) {
    refuse(s, request, ok.error());
    return {};
  }
  std::shared_ptr<format::ChunkDecoder> decoder;
  if (parsed->device >= 0) {
    auto d = pool_.device_decoder(parsed->device, gpu_);
    if (!d.ok()) {
      refuse(s, request, d.error());
      return {};
    }
    decoder = std::move(d).value();
  }
  plan_async(s, request, s.files.at(scan.file()), std::move(*parsed), std::move(decoder));
  return {};
}

void Server::pool_room() {
  for (uint64_t serial : pool_.waiters()) {
    if (Session* w = find(serial)) mark(*w);
  }
}

Result<void> Server::handle_release(Session& s, uint64_t lease) {
  auto it = s.leases.find(lease);
  OC_EXPECT(it != s.leases.end(), protocol, "Release of unknown lease {}", lease);
  s.bytes_in_flight -= it->second.bytes;
  if (it->second.slab && !it->second.in_place)
    pool_.give_back(s, it->second.slab, it->second.offset);
  if (it->second.device_slab) pool_.give_back(it->second.device_slab, it->second.offset);
  s.leases.erase(it);
  mark(s);  // room for the next batch
  return {};
}

void Server::handle_cancel(Session& s, const fbs::Cancel& c) {
  // An Open cannot be interrupted on its worker: its reply is dropped when it completes, and it
  // counts against the limits until then.
  if (c.scan() == 0) {
    if (auto it = s.opening.find(c.request()); it != s.opening.end()) s.opening.erase(it);
    return;
  }
  for (const ScanPtr& scan : s.scans) {
    if (scan->id == c.scan()) {
      drop_scan(s, scan);
      mark(s);
      return;
    }
  }
}

std::optional<Clock::time_point> Server::next_deadline() const {
  std::optional<Clock::time_point> next;
  const auto wait = std::chrono::milliseconds(cfg_.daemon_pool_wait_ms);
  for (uint64_t serial : pool_.waiters()) {
    auto it = sessions_.find(serial);
    if (it == sessions_.end()) continue;
    for (const ScanPtr& scan : it->second->scans) {
      if (!scan->unplaced) continue;
      const auto at = scan->waiting_since + wait;
      if (!next || at < *next) next = at;
    }
  }
  return next;
}

void Server::expire(Clock::time_point now) {
  const auto wait = std::chrono::milliseconds(cfg_.daemon_pool_wait_ms);
  std::vector<uint64_t> serials;
  for (uint64_t serial : pool_.waiters()) serials.push_back(serial);
  for (uint64_t serial : serials) {
    Session* s = find(serial);
    if (!s) continue;
    for (const ScanPtr& scan : s->scans) {
      if (!scan->unplaced || scan->waiting_since + wait > now) continue;
      if (scan->device >= 0) {
        fail_scan(
            *s, scan,
            OC_ERROR(Errc::out_of_memory,
                     "a decoded batch of {} bytes found no room in the device slabs of cuda:{} for "
                     "{} ms "
                     "(daemon_device_pool_bytes {}: other clients hold them); try again or ask the "
                     "operator for a larger pool",
                     scan->unplaced->bytes, scan->device, cfg_.daemon_pool_wait_ms,
                     cfg_.daemon_device_pool_bytes));
        mark(*s);
        continue;
      }
      fail_scan(*s, scan,
                OC_ERROR(Errc::out_of_memory,
                         "a decoded batch of {} bytes found no room in the slab pool for {} ms "
                         "(daemon_pool_bytes {}, daemon_uid_max_pool_bytes {}: other clients "
                         "hold it); try again or ask the operator for a larger pool",
                         scan->unplaced->bytes, cfg_.daemon_pool_wait_ms, cfg_.daemon_pool_bytes,
                         cfg_.daemon_uid_max_pool_bytes));
      mark(*s);
    }
  }
}

void Server::reconfigure(const Defaults& fresh, AccessPolicy policy) {
  policy_ = std::move(policy);
  // What a SIGHUP may change; the socket, message and pool sizes, threads, the metrics port and
  // the knobs of format/ and net/ keep their values until a restart.
  cfg_.daemon_max_clients = fresh.daemon_max_clients;
  cfg_.daemon_client_max_batches_in_flight = fresh.daemon_client_max_batches_in_flight;
  cfg_.daemon_client_max_bytes_in_flight = fresh.daemon_client_max_bytes_in_flight;
  cfg_.daemon_client_max_open_files = fresh.daemon_client_max_open_files;
  cfg_.daemon_client_max_scans = fresh.daemon_client_max_scans;
  cfg_.daemon_client_max_requests = fresh.daemon_client_max_requests;
  cfg_.daemon_uid_max_clients = fresh.daemon_uid_max_clients;
  cfg_.daemon_uid_max_pool_bytes = fresh.daemon_uid_max_pool_bytes;
  cfg_.daemon_pool_wait_ms = fresh.daemon_pool_wait_ms;
  cfg_.daemon_max_batch_rows = fresh.daemon_max_batch_rows;
  cfg_.daemon_max_scan_columns = fresh.daemon_max_scan_columns;
  cfg_.daemon_list_max_entries = fresh.daemon_list_max_entries;
  cfg_.daemon_client_max_queued_bytes = fresh.daemon_client_max_queued_bytes;
  cfg_.daemon_messages_per_wakeup = fresh.daemon_messages_per_wakeup;
  cfg_.daemon_allowed_uids = fresh.daemon_allowed_uids;
  cfg_.daemon_allowed_gids = fresh.daemon_allowed_gids;
  cfg_.daemon_s3_grants = fresh.daemon_s3_grants;
  cfg_.daemon_rados_grants = fresh.daemon_rados_grants;
  cfg_.daemon_http_hosts = fresh.daemon_http_hosts;
}

namespace {

ScanStatus scan_status(const Session& s, const ActiveScan& scan, std::string state) {
  ScanStatus out;
  out.scan = scan.id;
  out.pid = static_cast<uint32_t>(s.peer.pid);
  out.uid = static_cast<uint32_t>(s.peer.uid);
  out.uri = scan.file->source().name().substr(0, kStatusUriBytes);
  out.state = std::move(state);
  out.bytes = scan.bytes;
  out.profile = scan.profile;
  out.profile.wall_ns = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - scan.started).count());
  return out;
}

// A user sees the scans of its own uid; root sees every user's.
bool may_see(const Peer& viewer, uint32_t uid) { return viewer.uid == 0 || viewer.uid == uid; }

}  // namespace

void Server::remember_scan(const Session& s, const ActiveScan& scan, std::string state) {
  counters_.remember(scan_status(s, scan, std::move(state)));
}

Result<void> Server::handle_cache_clear(Session& s, uint64_t request) {
  // The cache is every user's: emptying it costs them all a fetch, so only an operator may.
  if (s.peer.uid != 0 && s.peer.uid != ::geteuid()) {
    ++counters_.requests_refused;
    send_error(s, request,
               OC_ERROR(Errc::denied, "only root and onecopyd's user may clear the node's cache"));
    return {};
  }
  format::ByteCache& cache = format::ByteCache::process();
  const format::ByteCacheStats before = cache.stats();
  cache.clear();
  const uint64_t metadata_bytes = format::MetadataCache::process().clear();
  log::get().info("cache cleared by uid {} pid {}: {} bytes in memory, {} on disk", s.peer.uid,
                  s.peer.pid, before.memory_bytes, before.disk_bytes);
  flatbuffers::FlatBufferBuilder fbb;
  fbb.Finish(fbs::CreateMessage(
      fbb, fbs::Body::CacheCleared,
      fbs::CreateCacheCleared(fbb, request, before.memory_bytes, before.disk_bytes, metadata_bytes)
          .Union()));
  send(s, fbb);
  return {};
}

Status Server::status(const Peer* viewer) const {
  Status st;
  for (const auto& [serial, s] : sessions_) {
    st.active_scans += static_cast<uint32_t>(s->scans.size());
    st.batches_in_flight += s->leases.size();
    if (viewer == nullptr || !may_see(*viewer, s->peer.uid)) continue;
    for (const ScanPtr& scan : s->scans) st.scans.push_back(scan_status(*s, *scan, "running"));
  }
  for (const ScanStatus& ended : counters_.ended_scans) {
    if (viewer != nullptr && may_see(*viewer, ended.uid)) st.scans.push_back(ended);
  }
  const auto up = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started_);
  st.version = OC_VERSION;
  st.uptime_ms = static_cast<uint64_t>(up.count());
  st.clients = static_cast<uint32_t>(sessions_.size());
  st.bytes_delivered = counters_.bytes_delivered;
  st.errors = counters_.errors;
  st.pool_bytes = pool_.bytes();
  st.pool_limit_bytes = cfg_.daemon_pool_bytes;
  st.batches_delivered = counters_.batches_delivered;
  st.gbps_10s = counters_.delivered_rate.per_second(up.count() / 1000,
                                                    static_cast<double>(up.count()) / 1e3) /
                1e9;
  st.requests_in_flight = io_.pending() + decode_.pending();
  st.bytes_copied = counters_.bytes_copied;
  st.bytes_copied_after_decode = counters_.bytes_copied_after_decode;
  st.bytes_in_place = counters_.bytes_in_place;
  st.copies_per_byte = counters_.bytes_delivered
                           ? static_cast<double>(counters_.bytes_copied) /
                                 static_cast<double>(counters_.bytes_delivered)
                           : 0.0;
  st.worker_threads = static_cast<uint32_t>(io_.size() + decode_.size());
  st.slabs_sent = counters_.slabs_sent;
  st.slabs = pool_.slabs();
  st.descriptors = descriptors();
  st.descriptor_budget = fd_budget_ == UINT64_MAX ? 0 : fd_budget_;
  st.connections_refused = counters_.connections_refused;
  st.requests_refused = counters_.requests_refused;
  const format::ByteCacheStats c = format::ByteCache::process().stats();
  st.cache_hits = c.hits_memory + c.hits_disk + c.waits;
  st.cache_misses = c.misses;
  st.cache_bytes_from_memory = c.bytes_from_memory;
  st.cache_bytes_from_disk = c.bytes_from_disk;
  st.cache_bytes_from_store = c.bytes_from_store;
  st.cache_evictions = c.evictions_memory + c.evictions_disk;
  st.cache_memory_bytes = c.memory_bytes;
  st.cache_memory_limit_bytes = c.memory_limit;
  st.cache_disk_bytes = c.disk_bytes;
  st.cache_disk_limit_bytes = c.disk_on ? c.disk_limit : 0;
  st.cache_disk_on = c.disk_on ? 1 : 0;
  st.cache_disk_errors = c.disk_errors;
  st.cache_disk_dropped = c.disk_dropped;
  const format::MetadataCacheStats m = format::MetadataCache::process().stats();
  st.metadata_cache_hits = m.hits;
  st.metadata_cache_misses = m.misses;
  st.metadata_cache_bytes = m.bytes;
  st.manifest_fallbacks = counters_.manifest_fallbacks;
  st.kept_files = kept_->size();
  st.kept_file_hits = kept_->hits();
  st.bytes_fetched = counters_.fetched->load();
  if (auto s3 = net::environment_client_if_made()) {
    st.s3_requests = s3->counters().requests.load();
    st.s3_retries = s3->counters().retries.load();
    st.s3_failures = s3->counters().failures.load();
  }
  for (const auto& [device, use] : pool_.devices()) {
    DeviceStatus d;
    d.device = device;
    d.share = use.share == kernels::ShareKind::vmm ? "vmm" : "ipc";
    d.memory_held_bytes = use.pool_bytes;
    for (const auto& [serial, session] : sessions_) {
      for (const auto& [lease, l] : session->leases) {
        if (l.device_slab && l.device_slab->device() == device) ++d.batches_in_flight;
      }
    }
    const kernels::DeviceScanStats stats = use.decoder->stats();
    d.bytes_decoded = stats.bytes_delivered;
    d.bytes_uploaded = stats.bytes_uploaded;
    d.decode_ns = stats.decode_ns;
    st.devices.push_back(std::move(d));
  }
  st.gpu_devices = static_cast<uint32_t>(gpu_.count);
  st.gpu_memory_used_bytes = gpu_.memory_used_bytes;
  st.gpu_memory_total_bytes = gpu_.memory_total_bytes;
  return st;
}

}  // namespace oc::daemon
