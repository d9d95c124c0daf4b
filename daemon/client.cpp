// SPDX-License-Identifier: Apache-2.0
#include "daemon/client.hpp"

#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

#include "config/defaults.hpp"
#include "daemon/wire.hpp"
#include "onecopy_build_config.h"

namespace oc::daemon {
namespace {

constexpr size_t kMaxReply = 64 << 20;

/// One of the connection's slabs, mapped read-only once; unmapped when the connection and every
/// batch in it are gone.
struct MappedSlab {
  void* base = nullptr;
  uint64_t bytes = 0;
  bool dedicated = false;
  ~MappedSlab() { ::munmap(base, bytes); }
};

/// One connection; shared by a stream and the batches it exported, and handed from one scan to
/// the next (IdleConns).
class Conn {
 public:
  explicit Conn(int fd) : fd_(fd) {}

  const pid_t pid = ::getpid();  // a forked child must not speak on its parent's connection
  // The daemon's slabs for this connection, mapped as SlabAdded named them; read and written
  // only by the stream using the connection.
  std::map<uint64_t, std::shared_ptr<MappedSlab>> slabs;

  /// True when nothing is waiting on the socket and the daemon has not hung up: a connection
  /// fit for the next scan.
  [[nodiscard]] bool quiet() const {
    pollfd p{fd_, POLLIN | POLLRDHUP, 0};
    return ::poll(&p, 1, 0) == 0;
  }

  // Unreleased batches of this connection and their slab bytes, against the daemon's limits
  // from HelloReply (0: unknown).
  std::atomic<uint64_t> held_batches{0}, held_bytes{0};
  uint64_t max_batches = 0, max_bytes = 0;

  /// True when the daemon will send no more batches until some are released (its backpressure
  /// rule, daemon/PROTOCOL.md) and nothing is waiting on the socket: a blocking receive would
  /// wait forever.
  [[nodiscard]] bool starved() const {
    const uint64_t n = held_batches.load();
    const bool at_limit = n > 0 && ((max_batches && n >= max_batches) ||
                                    (max_bytes && held_bytes.load() >= max_bytes));
    if (!at_limit) return false;
    pollfd p{fd_, POLLIN, 0};
    return ::poll(&p, 1, 0) == 0;
  }
  ~Conn() { ::close(fd_); }
  Conn(const Conn&) = delete;
  Conn& operator=(const Conn&) = delete;

  Result<void> send(flatbuffers::FlatBufferBuilder& fbb) {
    auto frame = make_frame(fbb);
    std::lock_guard lock(mu_);
    ssize_t n = ::send(fd_, frame.data(), frame.size(), MSG_NOSIGNAL);
    if (n != static_cast<ssize_t>(frame.size())) {
      return Error(Errc::io, "send to onecopyd failed", __FILE__, __LINE__, errno);
    }
    return {};
  }

  /// Receives one frame into buf_ (and an SCM_RIGHTS fd, if any, into @p fd).
  Result<const fbs::Message*> recv(int* fd) {
    // Peek the packet's real length first (MSG_TRUNC on SOCK_SEQPACKET, Linux 3.4+): replies
    // are small, and a buffer sized for the largest one would cost a 64 MiB clear per connection.
    // The daemon answers every request, so an end of stream means it went away (a restart, a
    // crash, or a disconnect for cause after its Error); io, so that clients may reconnect.
    ssize_t len = ::recv(fd_, nullptr, 0, MSG_PEEK | MSG_TRUNC);
    if (len < 0) {
      return Error(Errc::io, "daemon connection lost: recv from onecopyd failed", __FILE__,
                   __LINE__, errno);
    }
    if (len == 0) {
      return Error(Errc::io, "daemon connection lost: onecopyd closed the connection", __FILE__,
                   __LINE__);
    }
    OC_EXPECT(static_cast<size_t>(len) <= kMaxReply, protocol,
              "a {}-byte reply is over the {}-byte limit", len, kMaxReply);
    if (buf_.size() < static_cast<size_t>(len)) buf_.resize(static_cast<size_t>(len));
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
    iovec iov{buf_.data(), buf_.size()};
    msghdr mh{};
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = control;
    mh.msg_controllen = sizeof(control);
    ssize_t n = ::recvmsg(fd_, &mh, MSG_CMSG_CLOEXEC);
    if (n < 0) {
      return Error(Errc::io, "daemon connection lost: recv from onecopyd failed", __FILE__,
                   __LINE__, errno);
    }
    if (n == 0) {
      return Error(Errc::io, "daemon connection lost: onecopyd closed the connection", __FILE__,
                   __LINE__);
    }
    if (fd) *fd = -1;
    for (cmsghdr* c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
        int got;
        std::memcpy(&got, CMSG_DATA(c), sizeof(int));
        if (fd) *fd = got; else ::close(got);
      }
    }
    auto r = parse_frame({buf_.data(), static_cast<size_t>(n)}, kMaxReply);
    if (r.ok()) {
      if (const auto* e = (*r)->body_as_Error()) {
        if (fd && *fd >= 0) ::close(*fd);
        // The daemon names its error class; keep it so callers can branch on it.
        Errc code = Errc::protocol;
        const std::string name = e->code() ? e->code()->str() : "";
        for (int c = 0; c <= static_cast<int>(Errc::cancelled); ++c) {
          if (errc_name(static_cast<Errc>(c)) == name) code = static_cast<Errc>(c);
        }
        return Error(code, fmt::format("onecopyd: {}", e->message() ? e->message()->str() : ""),
                     __FILE__, __LINE__);
      }
    }
    return r;
  }

 private:
  int fd_;
  std::mutex mu_;
  std::vector<uint8_t> buf_;
};

Result<std::shared_ptr<Conn>> connect_and_hello(const std::string& path) {
  int fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (fd < 0) return Error(Errc::io, "socket()", __FILE__, __LINE__, errno);
  auto conn = std::make_shared<Conn>(fd);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  OC_EXPECT(path.size() < sizeof(addr.sun_path), invalid, "socket path too long: {}", path);
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    return Error(Errc::io, fmt::format("cannot connect to onecopyd at {}", path), __FILE__,
                 __LINE__, errno);
  }
  flatbuffers::FlatBufferBuilder fbb;
  auto hello = fbs::CreateHelloDirect(fbb, kProtocolVersion, nullptr, "libonecopy " OC_VERSION);
  fbb.Finish(fbs::CreateMessage(fbb, fbs::Body::Hello, hello.Union()));
  OC_TRY(conn->send(fbb));
  OC_ASSIGN_OR_RETURN(const fbs::Message* m, conn->recv(nullptr));
  const auto* reply = m->body_as_HelloReply();
  OC_EXPECT(reply, protocol, "onecopyd did not answer Hello");
  conn->max_batches = reply->max_batches_in_flight();
  conn->max_bytes = reply->max_bytes_in_flight();
  return conn;
}

// ---- Arrow reconstruction over a mapped slab --------------------------------------------------

struct SchemaPrivate {
  std::vector<std::string> strings;  // format, name
  std::vector<ArrowSchema> kids;
  std::vector<ArrowSchema*> kid_ptrs;
};

void release_schema(ArrowSchema* s) {
  auto* p = static_cast<SchemaPrivate*>(s->private_data);
  for (auto& k : p->kids) {
    if (k.release) k.release(&k);
  }
  delete p;
  s->release = nullptr;
}

struct SchemaNodeCopy {
  std::string format, name;
  int64_t flags;
  uint32_t n_children;
};

void build_schema(const std::vector<SchemaNodeCopy>& nodes, size_t& i, ArrowSchema* out) {
  const SchemaNodeCopy& n = nodes[i++];
  auto* p = new SchemaPrivate;
  p->strings = {n.format, n.name};
  p->kids.resize(n.n_children);
  for (uint32_t c = 0; c < n.n_children; ++c) {
    build_schema(nodes, i, &p->kids[c]);
    p->kid_ptrs.push_back(&p->kids[c]);
  }
  *out = ArrowSchema{};
  out->format = p->strings[0].c_str();
  out->name = p->strings[1].c_str();
  out->flags = n.flags;
  out->n_children = n.n_children;
  out->children = p->kid_ptrs.empty() ? nullptr : p->kid_ptrs.data();
  out->release = release_schema;
  out->private_data = p;
}

/// One batch's range of a slab; its destructor (the last array of the batch released) sends
/// Release, which frees the range for a later batch.
struct Lease {
  std::shared_ptr<Conn> conn;
  uint64_t lease = 0;
  std::shared_ptr<MappedSlab> slab;  // null for a batch of no bytes
  uint64_t begin = 0, bytes = 0;     // the batch's range of the slab
  ~Lease() {
    flatbuffers::FlatBufferBuilder fbb;
    auto rel = fbs::CreateRelease(fbb, lease);
    fbb.Finish(fbs::CreateMessage(fbb, fbs::Body::Release, rel.Union()));
    (void)conn->send(fbb);  // a dead daemon has reclaimed the lease already
    conn->held_batches -= 1;
    conn->held_bytes -= bytes;
  }
};

struct ArrayPrivate {
  std::shared_ptr<Lease> slab;
  std::vector<const void*> buffers;
  std::vector<ArrowArray> kids;
  std::vector<ArrowArray*> kid_ptrs;
};

void release_array(ArrowArray* a) {
  auto* p = static_cast<ArrayPrivate*>(a->private_data);
  for (auto& k : p->kids) {
    if (k.release) k.release(&k);
  }
  delete p;
  a->release = nullptr;
}

alignas(64) const uint8_t kEmpty[64] = {};

Result<void> build_array(const fbs::Batch& b, size_t& i, const std::shared_ptr<Lease>& slab,
                         int depth, ArrowArray* out) {
  OC_EXPECT(depth < 64 && b.arrays() && i < b.arrays()->size(), protocol,
            "Batch array tree is malformed");
  const fbs::ArrayNode* n = b.arrays()->Get(static_cast<flatbuffers::uoffset_t>(i++));
  auto p = std::make_unique<ArrayPrivate>();
  p->slab = slab;
  if (n->buffers()) {
    for (const fbs::BufferRef* r : *n->buffers()) {
      if (!r->present()) {
        p->buffers.push_back(nullptr);
        continue;
      }
      if (r->length() == 0) {
        p->buffers.push_back(kEmpty);
        continue;
      }
      OC_EXPECT(r->offset() >= slab->begin && r->offset() - slab->begin <= slab->bytes &&
                    r->length() <= slab->bytes - (r->offset() - slab->begin),
                protocol, "buffer [{}, +{}) outside its batch's range [{}, +{})", r->offset(),
                r->length(), slab->begin, slab->bytes);
      p->buffers.push_back(static_cast<const uint8_t*>(slab->slab->base) + r->offset());
    }
  }
  p->kids.resize(n->n_children());
  for (uint32_t c = 0; c < n->n_children(); ++c) {
    auto r = build_array(b, i, slab, depth + 1, &p->kids[c]);
    if (!r.ok()) {
      for (uint32_t j = 0; j < c; ++j) p->kids[j].release(&p->kids[j]);
      p->kids.clear();
      return r;
    }
    p->kid_ptrs.push_back(&p->kids[c]);
  }
  *out = ArrowArray{};
  out->length = n->length();
  out->null_count = n->null_count();
  out->offset = n->offset();
  out->n_buffers = static_cast<int64_t>(p->buffers.size());
  out->n_children = n->n_children();
  out->buffers = p->buffers.empty() ? nullptr : p->buffers.data();
  out->children = p->kid_ptrs.empty() ? nullptr : p->kid_ptrs.data();
  out->release = release_array;
  out->private_data = p.release();
  return {};
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
      if (c->pid == ::getpid() && c->quiet()) return c;
    }
    return nullptr;
  }

  void put(const std::string& socket, std::shared_ptr<Conn> c) {
    std::lock_guard lock(mu_);
    auto& v = idle_[socket];
    // A few are enough for one scan after another; each keeps its slabs in the daemon's pool.
    if (v.size() < 2) v.push_back(std::move(c));
  }

 private:
  std::mutex mu_;
  std::map<std::string, std::vector<std::shared_ptr<Conn>>> idle_;
};

struct StreamPrivate {
  std::shared_ptr<Conn> conn;
  std::shared_ptr<RemoteCursor> cursor;
  std::string socket;
  uint64_t file = 0;
  uint64_t scan = 0;
  std::vector<SchemaNodeCopy> schema;
  bool done = false;
  std::string last_error;
};

int stream_get_schema(ArrowArrayStream* s, ArrowSchema* out) {
  auto* p = static_cast<StreamPrivate*>(s->private_data);
  size_t i = 0;
  build_schema(p->schema, i, out);
  return 0;
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
      OC_EXPECT(fd >= 0, protocol, "SlabAdded came without its memfd");
      void* base = ::mmap(nullptr, added->bytes(), PROT_READ, MAP_SHARED, fd, 0);
      ::close(fd);
      if (base == MAP_FAILED) return Error(Errc::io, "mmap of a slab", __FILE__, __LINE__, errno);
      auto slab = std::make_shared<MappedSlab>();
      slab->base = base;
      slab->bytes = added->bytes();
      slab->dedicated = added->dedicated();
      p.conn->slabs[added->slab()] = std::move(slab);
      continue;
    }
    if (fd >= 0) ::close(fd);  // only SlabAdded carries one
    if (const auto* end = m->body_as_ScanEnd()) {
      if (end->scan() == p.scan) {
        p.done = true;
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
    p.conn->held_batches += 1;
    p.conn->held_bytes += lease->bytes;
    if (b->slab() != 0) {
      auto it = p.conn->slabs.find(b->slab());
      OC_EXPECT(it != p.conn->slabs.end(), protocol, "Batch in slab {}, which never came",
                b->slab());
      lease->slab = it->second;
      // A dedicated slab holds this batch only: it is unmapped when the batch is released.
      if (it->second->dedicated) p.conn->slabs.erase(it);
      OC_EXPECT(lease->begin <= lease->slab->bytes &&
                    lease->bytes <= lease->slab->bytes - lease->begin,
                protocol, "batch range [{}, +{}) outside the {}-byte slab", lease->begin,
                lease->bytes, lease->slab->bytes);
    } else {
      OC_EXPECT(lease->bytes == 0, protocol, "Batch of {} bytes came without a slab",
                lease->bytes);
    }
    size_t i = 0;
    OC_TRY(build_array(*b, i, lease, 0, out));
    p.cursor->advance({b->unit(), b->unit_rows()});
    return {};
  }
}

int stream_get_next(ArrowArrayStream* s, ArrowArray* out) {
  auto* p = static_cast<StreamPrivate*>(s->private_data);
  auto r = next_batch(*p, out);
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
    // Batches already on their way may still come, so the connection is not reused.
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

}  // namespace

format::UnitPosition RemoteCursor::position() const {
  std::lock_guard lock(mu_);
  return position_;
}

std::optional<Error> RemoteCursor::error() const {
  std::lock_guard lock(mu_);
  return error_;
}

void RemoteCursor::advance(format::UnitPosition position) {
  std::lock_guard lock(mu_);
  position_ = position;
}

void RemoteCursor::fail(Error e) {
  std::lock_guard lock(mu_);
  error_ = std::move(e);
}

std::string client_socket_path(const std::string& explicit_path) {
  if (!explicit_path.empty()) return explicit_path;
  if (const char* env = std::getenv("ONECOPY_SOCKET"); env && *env) return env;
  return builtin_defaults().daemon_socket;
}

Result<Status> query_status(const std::string& socket) {
  OC_ASSIGN_OR_RETURN(auto conn, connect_and_hello(socket));
  flatbuffers::FlatBufferBuilder fbb;
  auto req = fbs::CreateStatusRequest(fbb);
  fbb.Finish(fbs::CreateMessage(fbb, fbs::Body::StatusRequest, req.Union()));
  OC_TRY(conn->send(fbb));
  OC_ASSIGN_OR_RETURN(const fbs::Message* m, conn->recv(nullptr));
  const auto* r = m->body_as_StatusReply();
  OC_EXPECT(r, protocol, "onecopyd did not answer Status");
  Status s;
  s.version = r->version() ? r->version()->str() : "";
  s.uptime_ms = r->uptime_ms();
  s.clients = r->clients();
  s.active_scans = r->active_scans();
  s.batches_in_flight = r->batches_in_flight();
  s.bytes_delivered = r->bytes_delivered();
  s.errors = r->errors();
  s.pool_bytes = r->pool_bytes();
  s.pool_limit_bytes = r->pool_limit_bytes();
  s.batches_delivered = r->batches_delivered();
  s.gbps_10s = r->gbps_10s();
  s.requests_in_flight = r->requests_in_flight();
  s.bytes_copied = r->bytes_copied();
  s.copies_per_byte = r->copies_per_byte();
  s.worker_threads = r->worker_threads();
  s.slabs_sent = r->slabs_sent();
  s.gpu_devices = r->gpu_devices();
  s.gpu_memory_used_bytes = r->gpu_memory_used_bytes();
  s.gpu_memory_total_bytes = r->gpu_memory_total_bytes();
  s.bytes_fetched = r->bytes_fetched();
  s.s3_requests = r->s3_requests();
  s.s3_retries = r->s3_retries();
  s.s3_failures = r->s3_failures();
  return s;
}

std::string status_json(const Status& s) {
  return fmt::format(
      "{{\"version\": \"{}\", \"uptime_ms\": {}, \"clients\": {}, \"active_scans\": {}, "
      "\"batches_in_flight\": {}, \"bytes_delivered\": {}, \"batches_delivered\": {}, "
      "\"gbps_10s\": {}, \"requests_in_flight\": {}, \"errors\": {}, \"bytes_copied\": {}, "
      "\"copies_per_byte\": {}, \"pool_bytes\": {}, \"pool_limit_bytes\": {}, "
      "\"worker_threads\": {}, \"slabs_sent\": {}, \"gpu_devices\": {}, "
      "\"gpu_memory_used_bytes\": {}, \"gpu_memory_total_bytes\": {}, \"bytes_fetched\": {}, "
      "\"s3_requests\": {}, \"s3_retries\": {}, \"s3_failures\": {}}}",
      s.version, s.uptime_ms, s.clients, s.active_scans, s.batches_in_flight, s.bytes_delivered,
      s.batches_delivered, s.gbps_10s, s.requests_in_flight, s.errors, s.bytes_copied,
      s.copies_per_byte, s.pool_bytes, s.pool_limit_bytes, s.worker_threads, s.slabs_sent,
      s.gpu_devices, s.gpu_memory_used_bytes, s.gpu_memory_total_bytes, s.bytes_fetched,
      s.s3_requests, s.s3_retries, s.s3_failures);
}

std::string status_prometheus(const Status& s) {
  std::string out;
  auto metric = [&](std::string_view name, std::string_view type, std::string_view help,
                    auto value) {
    out += fmt::format("# HELP onecopy_{0} {1}\n# TYPE onecopy_{0} {2}\nonecopy_{0} {3}\n", name,
                       help, type, value);
  };
  // Labels carry the version, as Prometheus' own *_build_info metrics do.
  out += fmt::format(
      "# HELP onecopy_build_info onecopyd's version.\n# TYPE onecopy_build_info gauge\n"
      "onecopy_build_info{{version=\"{}\"}} 1\n",
      s.version);
  metric("uptime_seconds", "gauge", "Seconds since onecopyd started.",
         static_cast<double>(s.uptime_ms) / 1e3);
  metric("clients", "gauge", "Connected clients.", s.clients);
  metric("active_scans", "gauge", "Scans being served.", s.active_scans);
  metric("batches_in_flight", "gauge", "Batches leased to clients, not yet released.",
         s.batches_in_flight);
  metric("delivered_bytes_total", "counter", "Arrow buffer bytes sent in batches.",
         s.bytes_delivered);
  metric("delivered_batches_total", "counter", "Batches sent.", s.batches_delivered);
  metric("delivered_gigabytes_per_second", "gauge",
         "Delivery rate over the last 10 s, in GB/s (1e9 bytes).", s.gbps_10s);
  metric("requests_in_flight", "gauge", "Opens and decodes queued or running on the workers.",
         s.requests_in_flight);
  metric("errors_total", "counter", "Error replies, refused connections and disconnects.",
         s.errors);
  metric("copied_bytes_total", "counter", "Bytes copied into slabs, sent or not.",
         s.bytes_copied);
  metric("copies_per_byte", "gauge", "Bytes copied into slabs per byte delivered.",
         s.copies_per_byte);
  metric("pool_bytes", "gauge", "Bytes of the slabs of every client.", s.pool_bytes);
  metric("pool_limit_bytes", "gauge", "daemon_pool_bytes.", s.pool_limit_bytes);
  metric("worker_threads", "gauge", "Threads that open files and decode batches.",
         s.worker_threads);
  metric("slabs_sent_total", "counter", "Slab descriptors sent to clients (each slab once).",
         s.slabs_sent);
  metric("fetched_bytes_total", "counter", "Segment bytes scans read from files and objects.",
         s.bytes_fetched);
  metric("s3_requests_total", "counter", "S3 requests (retries not counted).", s.s3_requests);
  metric("s3_retries_total", "counter", "S3 requests retried.", s.s3_retries);
  metric("s3_failures_total", "counter", "S3 requests that failed after their retries.",
         s.s3_failures);
  metric("gpu_devices", "gauge", "CUDA devices onecopyd sees (0 without a GPU or CUDA build).",
         s.gpu_devices);
  metric("gpu_memory_used_bytes", "gauge", "Device memory in use, by any process, all GPUs.",
         s.gpu_memory_used_bytes);
  metric("gpu_memory_total_bytes", "gauge", "Device memory of all GPUs.",
         s.gpu_memory_total_bytes);
  return out;
}

Result<std::vector<std::string>> remote_list(const std::string& socket, const std::string& pattern) {
  OC_ASSIGN_OR_RETURN(auto conn, connect_and_hello(socket));
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
    OC_EXPECT(uris.size() > before, protocol, "onecopyd sent an empty Listed part with more to come");
  }
}

Result<std::vector<std::pair<uint64_t, uint64_t>>> remote_units(const std::string& socket,
                                                               const std::string& uri,
                                                               uint64_t max_rows) {
  OC_EXPECT(max_rows > 0, invalid, "units need at least one row");
  OC_ASSIGN_OR_RETURN(auto conn, connect_and_hello(socket));
  flatbuffers::FlatBufferBuilder fbb;
  fbb.Finish(fbs::CreateMessage(fbb, fbs::Body::Open,
                                fbs::CreateOpenDirect(fbb, 1, uri.c_str(), max_rows).Union()));
  OC_TRY(conn->send(fbb));
  OC_ASSIGN_OR_RETURN(const fbs::Message* m, conn->recv(nullptr));
  const auto* opened = m->body_as_Opened();
  OC_EXPECT(opened, protocol, "onecopyd did not answer Open");
  std::vector<std::pair<uint64_t, uint64_t>> units;
  if (const auto* u = opened->units()) {
    OC_EXPECT(u->size() % 2 == 0, protocol, "Opened.units has an odd length");
    for (flatbuffers::uoffset_t i = 0; i < u->size(); i += 2) {
      units.emplace_back(u->Get(i), u->Get(i + 1));
    }
  }
  OC_EXPECT(opened->rows() == 0 || !units.empty(), protocol,
            "onecopyd sent no units for a file of {} rows (an older daemon?)", opened->rows());
  return units;
}

namespace {

Result<std::shared_ptr<const RemoteCursor>> start_scan(const std::shared_ptr<Conn>& conn,
                                                       const std::string& socket,
                                                       const std::string& uri,
                                                       const RemoteScanOptions& options,
                                                       ArrowArrayStream* out) {
  {
    flatbuffers::FlatBufferBuilder fbb;
    auto open = fbs::CreateOpenDirect(fbb, 1, uri.c_str());
    fbb.Finish(fbs::CreateMessage(fbb, fbs::Body::Open, open.Union()));
    OC_TRY(conn->send(fbb));
  }
  OC_ASSIGN_OR_RETURN(const fbs::Message* m, conn->recv(nullptr));
  const auto* opened = m->body_as_Opened();
  OC_EXPECT(opened, protocol, "onecopyd did not answer Open");
  const uint64_t file = opened->file();
  {
    flatbuffers::FlatBufferBuilder fbb;
    std::vector<flatbuffers::Offset<flatbuffers::String>> cols;
    for (const auto& c : options.columns) cols.push_back(fbb.CreateString(c));
    auto cv = fbb.CreateVector(cols);
    auto filter = fbb.CreateString(options.filter);
    const format::ShardSpec shard = options.shard.value_or(format::ShardSpec{});
    std::vector<uint64_t> flat;
    for (const auto& [b, e] : options.ranges) flat.insert(flat.end(), {b, e});
    auto ranges = fbb.CreateVector(flat);
    auto scan = fbs::CreateScan(fbb, 2, file, cv, filter, options.batch_rows,
                                options.row_range ? options.row_range->first : 0,
                                options.row_range ? options.row_range->second : 0,
                                options.row_range.has_value(), options.shard.has_value(),
                                shard.rank, shard.world_size, shard.worker, shard.num_workers,
                                shard.shuffle, shard.seed, shard.epoch, options.start.unit,
                                options.start.rows, options.unit_rows, ranges);
    fbb.Finish(fbs::CreateMessage(fbb, fbs::Body::Scan, scan.Union()));
    OC_TRY(conn->send(fbb));
  }
  OC_ASSIGN_OR_RETURN(m, conn->recv(nullptr));
  const auto* begin = m->body_as_ScanBegin();
  OC_EXPECT(begin && begin->schema() && begin->schema()->size() > 0, protocol,
            "onecopyd did not answer Scan");
  auto p = std::make_unique<StreamPrivate>();
  p->conn = conn;
  p->socket = socket;
  p->file = file;
  p->cursor = std::make_shared<RemoteCursor>(
      begin->units(),
      options.shard || !options.ranges.empty() ? options.start : format::UnitPosition{});
  p->scan = begin->scan();
  uint64_t expected = 1;
  for (const fbs::SchemaNode* n : *begin->schema()) {
    p->schema.push_back({n->format() ? n->format()->str() : "", n->name() ? n->name()->str() : "",
                         n->flags(), n->n_children()});
    expected += n->n_children();
  }
  OC_EXPECT(expected == p->schema.size(), protocol, "ScanBegin schema tree is malformed");
  std::shared_ptr<const RemoteCursor> cursor = p->cursor;
  *out = ArrowArrayStream{};
  out->get_schema = stream_get_schema;
  out->get_next = stream_get_next;
  out->get_last_error = stream_last_error;
  out->release = stream_release;
  out->private_data = p.release();
  return cursor;
}

}  // namespace

Result<std::shared_ptr<const RemoteCursor>> remote_scan(const std::string& socket,
                                                        const std::string& uri,
                                                        const RemoteScanOptions& options,
                                                        ArrowArrayStream* out) {
  OC_EXPECT(!(options.shard && options.row_range), invalid,
            "a sharded scan reads whole units; it takes no row range");
  OC_EXPECT(options.ranges.empty() || (!options.shard && !options.row_range), invalid,
            "a scan of explicit ranges takes no shard and no row range");
  if (auto idle = IdleConns::get().take(socket)) {
    auto r = start_scan(idle, socket, uri, options, out);
    // An idle connection the daemon dropped meanwhile (a restart) fails with io: connect anew.
    if (r.ok() || r.error().code() != Errc::io) return r;
  }
  OC_ASSIGN_OR_RETURN(auto conn, connect_and_hello(socket));
  return start_scan(conn, socket, uri, options, out);
}

}  // namespace oc::daemon
