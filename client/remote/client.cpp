// SPDX-License-Identifier: Apache-2.0
// The remote calls of the client library: status, listings, units and scans. Framing and the
// connection's rules are daemon/conn.cpp; the Arrow structs over slabs daemon/arrow_import.cpp.
#include "client/remote/client.hpp"

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <map>
#include <mutex>

#include "client/remote/arrow_import.hpp"
#include "client/remote/conn.hpp"
#include "config/defaults.hpp"
#include "config/fd.hpp"
#include "config/json.hpp"
#include "daemon/scan_wire.hpp"
#include "format/segment_source.hpp"
#include "kernels/shared_memory.hpp"
#include "net/open_uri.hpp"

namespace oc::client {

// The protocol both sides speak (daemon/wire.hpp, daemon/protocol.fbs, daemon/status.hpp).
using namespace oc::daemon;  // NOLINT(google-build-using-namespace)
namespace {

bool is_object_uri(std::string_view uri) {
  return uri.starts_with("s3://") || uri.starts_with("rados://") || uri.starts_with("http://") ||
         uri.starts_with("https://");
}

// Sends Open for @p uri. A local file is opened here, with this process's permissions, and its
// descriptor goes with the message; the daemon never resolves a client's path (a relative path
// means what it means here).
Result<void> send_open(Conn& conn, uint64_t request, const std::string& uri, uint64_t unit_rows) {
  UniqueFd fd;
  if (!is_object_uri(uri)) {
    OC_ASSIGN_OR_RETURN(fd, format::open_readable_file(uri));
  }
  flatbuffers::FlatBufferBuilder fbb;
  auto open = fbs::CreateOpenDirect(fbb, request, uri.c_str(), unit_rows);
  fbb.Finish(fbs::CreateMessage(fbb, fbs::Body::Open, open.Union()));
  return conn.send(fbb, fd.get());  // the message in flight holds its own reference
}

/// Connections of this process whose last scan ran to its end, by socket path. The next scan
/// takes one, which skips the connect and Hello and, above all, reuses the slabs the daemon made
/// for it: fresh slab pages cost a page fault each, on both sides.
class IdleConns {
 public:
  static IdleConns& get() {
    static auto* pool = new IdleConns;  // never destroyed: streams may outlive static destructors
    return *pool;
  }

  std::shared_ptr<Conn> take(const std::string& socket) {
    std::lock_guard lock(mu_);
    auto& v = idle_[socket];
    while (!v.empty()) {
      auto c = std::move(v.back());
      v.pop_back();
      if (c->ours() && c->quiet()) return c;
    }
    return nullptr;
  }

  void put(const std::string& socket, std::shared_ptr<Conn> c) {
    std::lock_guard lock(mu_);
    auto& v = idle_[socket];
    if (v.size() < kPerSocket) v.push_back(std::move(c));
  }

 private:
  // As many as a process reads at once, so that every scan finds one: onecopy.torch reads a
  // shuffle group's files 8 at a time while the previous group's 8 scans hold their batches.
  // Each keeps its slabs in the daemon's pool; the daemon closes idle ones when a batch finds no
  // room (daemon/pipeline.cpp close_idle).
  static constexpr size_t kPerSocket = 16;

  std::mutex mu_;
  std::map<std::string, std::vector<std::shared_ptr<Conn>>> idle_;
};

struct StreamPrivate {
  std::shared_ptr<Conn> conn;
  std::shared_ptr<client::ScanCursor> cursor;
  format::ScanProfile profile;  ///< what the cursor reports, as this stream knows it
  std::string socket;
  uint64_t file = 0;
  uint64_t scan = 0;
  std::vector<SchemaNodeCopy> schema;
  uintptr_t consumer_stream = 0;  ///< a device scan's (remote_scan)
  bool done = false;
  std::string last_error;
};

int stream_get_schema(ArrowArrayStream* s, ArrowSchema* out) {
  build_schema(static_cast<StreamPrivate*>(s->private_data)->schema, out);
  return 0;
}

Result<void> map_slab(Conn& conn, const fbs::SlabAdded& added, int fd) {
  OC_EXPECT(fd >= 0, protocol, "SlabAdded came without its memfd");
  void* base = ::mmap(nullptr, added.bytes(), PROT_READ, MAP_SHARED, fd, 0);
  const int err = errno;
  ::close(fd);
  if (base == MAP_FAILED) return Error(Errc::io, "mmap of a slab", __FILE__, __LINE__, err);
  auto slab = std::make_shared<MappedSlab>();
  slab->base = base;
  slab->bytes = added.bytes();
  slab->dedicated = added.dedicated();
  conn.slabs[added.slab()] = std::move(slab);
  return {};
}

// Maps a device slab: its VMM descriptor, or its IPC handle when none came.
Result<void> map_device_slab(Conn& conn, const fbs::DeviceSlabAdded& added, int fd) {
  UniqueFd owned(fd);
  OC_EXPECT(added.bytes() > 0 && added.device() >= 0, protocol,
            "DeviceSlabAdded of {} bytes on device {}", added.bytes(), added.device());
  Result<kernels::SharedDeviceMemory> memory =
      Error(Errc::protocol, "DeviceSlabAdded", __FILE__, __LINE__);
  if (owned.valid()) {
    memory = kernels::SharedDeviceMemory::import_fd(added.device(), owned.get(), added.bytes());
  } else {
    const auto* h = added.ipc_handle();
    OC_EXPECT(h && h->size() == 64, protocol,
              "DeviceSlabAdded came with neither a descriptor nor an IPC handle");
    std::array<uint8_t, 64> handle{};
    std::copy(h->begin(), h->end(), handle.begin());
    memory = kernels::SharedDeviceMemory::import_ipc(added.device(), handle);
  }
  OC_TRY(memory);
  auto held = std::make_shared<kernels::SharedDeviceMemory>(std::move(memory).value());
  auto slab = std::make_shared<MappedSlab>();
  slab->base = held->data();
  slab->bytes = std::min<uint64_t>(added.bytes(), held->size() != 0 ? held->size() : added.bytes());
  slab->device_memory = std::move(held);
  conn.slabs[added.slab()] = std::move(slab);
  return {};
}

Result<void> next_batch(StreamPrivate& p, ArrowArray* out) {
  *out = ArrowArray{};
  if (p.done) return {};
  while (true) {
    if (p.conn->starved()) {
      return Error(Errc::invalid,
                   fmt::format("this scan holds {} unreleased batches ({} bytes), the daemon's "
                               "limit per client (daemon_client_max_batches_in_flight, "
                               "daemon_client_max_bytes_in_flight), so no more can come: release "
                               "batches as they are used instead of keeping the whole scan, or "
                               "raise the limits",
                               p.conn->held_batches.load(), p.conn->held_bytes.load()),
                   __FILE__, __LINE__);
    }
    int fd = -1;
    OC_ASSIGN_OR_RETURN(const fbs::Message* m, p.conn->recv(&fd));
    if (const auto* added = m->body_as_SlabAdded()) {
      OC_TRY(map_slab(*p.conn, *added, fd));
      continue;
    }
    if (const auto* added = m->body_as_DeviceSlabAdded()) {
      OC_TRY(map_device_slab(*p.conn, *added, fd));
      continue;
    }
    if (fd >= 0) ::close(fd);  // only SlabAdded carries one
    if (const auto* end = m->body_as_ScanEnd()) {
      if (end->scan() == p.scan) {
        p.done = true;
        p.profile.storage_ns = end->storage_ns();
        p.profile.decode_ns = end->decode_ns();
        p.profile.copy_ns = end->copy_ns();
        p.profile.consumer_wait_ns = end->consumer_wait_ns();
        p.profile.pool_wait_ns = end->pool_wait_ns();
        p.profile.bytes_read = end->bytes_read();
        p.profile.complete = true;
        return {};
      }
      continue;
    }
    const auto* b = m->body_as_Batch();
    if (!b) continue;
    auto lease = std::make_shared<Lease>();
    lease->conn = p.conn;
    lease->lease = b->lease();
    lease->begin = b->slab_offset();
    lease->bytes = b->slab_bytes();
    // A batch decoded in place spans bytes of others; it holds only its own (pinned).
    lease->held = b->pinned() != 0 ? b->pinned() : lease->bytes;
    lease->on_device = b->device() >= 0;
    lease->consumer_stream = p.consumer_stream;
    p.conn->held_batches += 1;
    p.conn->held_bytes += lease->held;
    if (b->slab() != 0) {
      auto it = p.conn->slabs.find(b->slab());
      OC_EXPECT(it != p.conn->slabs.end(), protocol, "Batch in slab {}, which never came",
                b->slab());
      lease->slab = it->second;
      OC_EXPECT(lease->on_device == (it->second->device_memory != nullptr), protocol,
                "a {} batch in a {} slab", lease->on_device ? "device" : "host",
                it->second->device_memory ? "device" : "host");
      // A dedicated slab holds this batch only: it is unmapped when the batch is released.
      if (it->second->dedicated) p.conn->slabs.erase(it);
      OC_EXPECT(
          lease->begin <= lease->slab->bytes && lease->bytes <= lease->slab->bytes - lease->begin,
          protocol, "batch range [{}, +{}) outside the {}-byte slab", lease->begin, lease->bytes,
          lease->slab->bytes);
    } else {
      OC_EXPECT(lease->bytes == 0, protocol, "Batch of {} bytes came without a slab", lease->bytes);
    }
    // A consumer that keeps batches (list(scan), pa.table(stream)) would use up the daemon's
    // per-client limits and stall its own scan: past half of them, a batch is copied out of
    // its slab and released at once. Batches consumed one at a time stay zero-copy.
    if (p.conn->past_half_limit()) OC_TRY(lease->copy_out());
    OC_TRY(build_batch(*b, lease, out));
    p.cursor->advance({b->unit(), b->unit_rows()});
    p.profile.rows += b->rows();
    p.profile.batches += 1;
    return {};
  }
}

int stream_get_next(ArrowArrayStream* s, ArrowArray* out) {
  auto* p = static_cast<StreamPrivate*>(s->private_data);
  const uint64_t asked = format::monotonic_ns();
  auto r = next_batch(*p, out);
  // The daemon's stages come with ScanEnd; the wait for the daemon is measured here.
  p->profile.wait_ns += format::monotonic_ns() - asked;
  if (!r.ok()) p->profile.complete = true;
  p->cursor->set_profile(p->profile);
  if (!r.ok()) {
    p->last_error = r.error().to_string();
    p->cursor->fail(std::move(r.error()));
    return EIO;
  }
  return 0;
}

const char* stream_last_error(ArrowArrayStream* s) {
  return static_cast<StreamPrivate*>(s->private_data)->last_error.c_str();
}

void stream_release(ArrowArrayStream* s) {
  auto* p = static_cast<StreamPrivate*>(s->private_data);
  if (!p->done) {
    // Abandoned early: stop the daemon's scan; batches still held keep the connection open.
    // Batches already on their way may still come, so the connection is not reused. (In a
    // forked child the send fails: a child never cancels its parent's scan.)
    flatbuffers::FlatBufferBuilder fbb;
    auto cancel = fbs::CreateCancel(fbb, p->scan);
    fbb.Finish(fbs::CreateMessage(fbb, fbs::Body::Cancel, cancel.Union()));
    (void)p->conn->send(fbb);
  } else if (p->last_error.empty()) {
    // Ran to its end: close the file and hand the connection on, slabs and all.
    flatbuffers::FlatBufferBuilder fbb;
    auto close = fbs::CreateClose(fbb, p->file);
    fbb.Finish(fbs::CreateMessage(fbb, fbs::Body::Close, close.Union()));
    if (p->conn->send(fbb).ok()) IdleConns::get().put(p->socket, p->conn);
  }
  delete p;
  s->release = nullptr;
}

Result<std::shared_ptr<const client::ScanCursor>> start_scan(
    const std::shared_ptr<Conn>& conn, const std::string& socket, const std::string& uri,
    const format::ScanRequest& request, uintptr_t consumer_stream, ArrowArrayStream* out) {
  OC_TRY(send_open(*conn, 1, uri, 0));
  OC_ASSIGN_OR_RETURN(const fbs::Message* m, conn->recv(nullptr));
  const auto* opened = m->body_as_Opened();
  OC_EXPECT(opened, protocol, "onecopyd did not answer Open");
  const uint64_t file = opened->file();
  {
    flatbuffers::FlatBufferBuilder fbb;
    auto scan = to_fbs(fbb, 2, file, request);
    fbb.Finish(fbs::CreateMessage(fbb, fbs::Body::Scan, scan.Union()));
    OC_TRY(conn->send(fbb));
  }
  OC_ASSIGN_OR_RETURN(m, conn->recv(nullptr));
  const auto* begin = m->body_as_ScanBegin();
  OC_EXPECT(begin, protocol, "onecopyd did not answer Scan");
  auto p = std::make_unique<StreamPrivate>();
  OC_ASSIGN_OR_RETURN(p->schema, schema_of(*begin));
  p->conn = conn;
  p->socket = socket;
  p->file = file;
  p->consumer_stream = consumer_stream;
  p->cursor = std::make_shared<client::ScanCursor>(
      begin->units(), request.reads_units() ? request.start : format::UnitPosition{});
  p->scan = begin->scan();
  std::shared_ptr<const client::ScanCursor> cursor = p->cursor;
  *out = ArrowArrayStream{};
  out->get_schema = stream_get_schema;
  out->get_next = stream_get_next;
  out->get_last_error = stream_last_error;
  out->release = stream_release;
  out->private_data = p.release();
  return cursor;
}

}  // namespace

std::string client_socket_path(const std::string& explicit_path) {
  if (!explicit_path.empty()) return explicit_path;
  if (const char* env = std::getenv("ONECOPY_SOCKET"); env && *env) return env;
  return builtin_defaults().daemon_socket;
}

Result<std::optional<std::string>> serving_daemon_socket(const std::string& explicit_path) {
  std::string path = explicit_path, origin = "the socket given";
  if (path.empty()) {
    if (const char* env = std::getenv("ONECOPY_SOCKET")) {
      if (*env == '\0') return std::optional<std::string>{};  // ONECOPY_SOCKET= : in process
      path = env;
      origin = "$ONECOPY_SOCKET";
    } else {
      path = builtin_defaults().daemon_socket;
      origin = "the default socket";
      struct stat st {};
      if (::lstat(path.c_str(), &st) != 0 && errno == ENOENT) return std::optional<std::string>{};
    }
  }
  auto conn = Conn::open(path);
  if (conn.ok()) return std::optional<std::string>(path);
  const int e = conn.error().sys_errno();
  const std::string why =
      e == ENOENT         ? "the socket does not exist"
      : e == ECONNREFUSED ? "nobody listens there (onecopyd stopped or crashed: journalctl -u "
                            "onecopyd)"
      : e == EACCES       ? "this user may not connect (the socket is for the onecopy group: "
                            "usermod -aG onecopy USER, then log in again)"
                          : conn.error().describe();
  return Error(conn.error().code(),
               fmt::format("no onecopyd answers at {} ({}): {}. Start it (systemctl start "
                           "onecopyd.socket), point ONECOPY_SOCKET at the daemon's socket, or "
                           "read in this process with your own credentials: ONECOPY_SOCKET= "
                           "(empty), onecopy.open(..., daemon=False) or socket=False",
                           path, origin, why),
               __FILE__, __LINE__);
}

Result<Status> query_status(const std::string& socket) {
  OC_ASSIGN_OR_RETURN(auto conn, Conn::open(socket));
  flatbuffers::FlatBufferBuilder fbb;
  auto req = fbs::CreateStatusRequest(fbb);
  fbb.Finish(fbs::CreateMessage(fbb, fbs::Body::StatusRequest, req.Union()));
  OC_TRY(conn->send(fbb));
  OC_ASSIGN_OR_RETURN(const fbs::Message* m, conn->recv(nullptr));
  const auto* r = m->body_as_StatusReply();
  OC_EXPECT(r, protocol, "onecopyd did not answer Status");
  return status_from_reply(*r);
}

Result<net::DatasetIndex> remote_dataset(const std::string& socket, const std::string& pattern,
                                         uint64_t unit_rows, bool footers) {
  OC_ASSIGN_OR_RETURN(auto conn, Conn::open(socket));
  flatbuffers::FlatBufferBuilder fbb;
  fbb.Finish(fbs::CreateMessage(
      fbb, fbs::Body::Dataset,
      fbs::CreateDatasetDirect(fbb, 1, pattern.c_str(), unit_rows, footers).Union()));
  OC_TRY(conn->send(fbb));
  OC_ASSIGN_OR_RETURN(const fbs::Message* m, conn->recv(nullptr));
  const auto* r = m->body_as_DatasetIndex();
  OC_EXPECT(r && r->files(), protocol, "onecopyd did not answer Dataset");
  net::DatasetIndex out;
  out.manifest = r->manifest() ? r->manifest()->str() : "";
  out.from_cache = r->from_cache();
  out.from_manifest = r->from_manifest();
  out.fallbacks = r->fallbacks();
  for (const fbs::DatasetFile* f : *r->files()) {
    OC_EXPECT(f->uri(), protocol, "a DatasetFile without its URI");
    net::DatasetFile file;
    file.uri = f->uri()->str();
    file.etag = f->etag() ? f->etag()->str() : "";
    file.size = f->size();
    file.rows = f->rows();
    if (f->units()) file.units.assign(f->units()->begin(), f->units()->end());
    OC_EXPECT(file.units.size() % 2 == 0, protocol, "{}: an odd number of unit bounds", file.uri);
    file.footer_offset = f->footer_offset();
    if (f->footer())
      file.footer = format::Buffer::copy_of({f->footer()->data(), f->footer()->size()});
    out.files.push_back(std::move(file));
  }
  return out;
}

std::string dataset_json(const net::DatasetIndex& index) {
  std::string out = fmt::format(
      "{{\"manifest\": {}, \"from_cache\": {}, \"from_manifest\": {}, "
      "\"fallbacks\": {}, \"files\": [",
      json_string(index.manifest), index.from_cache, index.from_manifest, index.fallbacks);
  for (size_t i = 0; i < index.files.size(); ++i) {
    const net::DatasetFile& f = index.files[i];
    out += fmt::format(
        "{}{{\"uri\": {}, \"etag\": {}, \"size\": {}, \"rows\": {}, \"units\": [{}], "
        "\"footer_offset\": {}, \"footer\": \"",
        i ? ", " : "", json_string(f.uri), json_string(f.etag), f.size, f.rows,
        fmt::join(f.units, ", "), f.footer_offset);
    for (uint8_t b : f.footer.span()) out += fmt::format("{:02x}", b);
    out += "\"}";
  }
  return out + "]}";
}

Result<ClearedCache> clear_cache(const std::string& socket) {
  OC_ASSIGN_OR_RETURN(auto conn, Conn::open(socket));
  flatbuffers::FlatBufferBuilder fbb;
  fbb.Finish(fbs::CreateMessage(fbb, fbs::Body::CacheClear, fbs::CreateCacheClear(fbb, 1).Union()));
  OC_TRY(conn->send(fbb));
  OC_ASSIGN_OR_RETURN(const fbs::Message* m, conn->recv(nullptr));
  const auto* r = m->body_as_CacheCleared();
  OC_EXPECT(r, protocol, "onecopyd did not answer CacheClear");
  return ClearedCache{r->memory_bytes(), r->disk_bytes(), r->metadata_bytes()};
}

Result<std::vector<std::string>> remote_list(const std::string& socket,
                                             const std::string& pattern) {
  // A local pattern means this process's files, with its permissions: expanded here.
  if (!pattern.starts_with("s3://") && !pattern.starts_with("rados://")) {
    return net::expand_uri(pattern);
  }
  OC_ASSIGN_OR_RETURN(auto conn, Conn::open(socket));
  std::vector<std::string> uris;
  while (true) {
    flatbuffers::FlatBufferBuilder fbb;
    fbb.Finish(fbs::CreateMessage(
        fbb, fbs::Body::List, fbs::CreateListDirect(fbb, 1, pattern.c_str(), uris.size()).Union()));
    OC_TRY(conn->send(fbb));
    OC_ASSIGN_OR_RETURN(const fbs::Message* m, conn->recv(nullptr));
    const auto* listed = m->body_as_Listed();
    OC_EXPECT(listed, protocol, "onecopyd did not answer List");
    const size_t before = uris.size();
    if (listed->uris()) {
      for (const auto* u : *listed->uris()) uris.push_back(u->str());
    }
    if (!listed->more()) return uris;
    OC_EXPECT(uris.size() > before, protocol,
              "onecopyd sent an empty Listed part with more to come");
  }
}

Result<std::vector<std::pair<uint64_t, uint64_t>>> remote_units(const std::string& socket,
                                                                const std::string& uri,
                                                                uint64_t max_rows) {
  OC_EXPECT(max_rows > 0, invalid, "units need at least one row");
  OC_ASSIGN_OR_RETURN(auto conn, Conn::open(socket));
  OC_TRY(send_open(*conn, 1, uri, max_rows));
  OC_ASSIGN_OR_RETURN(const fbs::Message* m, conn->recv(nullptr));
  const auto* opened = m->body_as_Opened();
  OC_EXPECT(opened, protocol, "onecopyd did not answer Open");
  std::vector<std::pair<uint64_t, uint64_t>> units;
  if (const auto* u = opened->units()) {
    OC_EXPECT(u->size() % 2 == 0, protocol, "Opened.units has an odd length");
    units.reserve(u->size() / 2);
    for (flatbuffers::uoffset_t i = 0; i < u->size(); i += 2) {
      units.emplace_back(u->Get(i), u->Get(i + 1));
    }
  }
  OC_EXPECT(opened->rows() == 0 || !units.empty(), protocol,
            "onecopyd sent no units for a file of {} rows (an older daemon?)", opened->rows());
  return units;
}

Result<std::shared_ptr<const client::ScanCursor>> remote_scan(const std::string& socket,
                                                              const std::string& uri,
                                                              const format::ScanRequest& request,
                                                              uintptr_t consumer_stream,
                                                              ArrowArrayStream* out) {
  if (auto idle = IdleConns::get().take(socket)) {
    auto r = start_scan(idle, socket, uri, request, consumer_stream, out);
    // An idle connection the daemon dropped meanwhile (a restart) fails with io: connect anew.
    if (r.ok() || r.error().code() != Errc::io) return r;
  }
  OC_ASSIGN_OR_RETURN(auto conn, Conn::open(socket));
  return start_scan(conn, socket, uri, request, consumer_stream, out);
}

}  // namespace oc::client
