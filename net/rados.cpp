// SPDX-License-Identifier: Apache-2.0
#include "net/rados.hpp"

#include <rados/librados.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>

#include "config/defaults.hpp"

namespace oc::net {

Result<RadosUri> parse_rados_uri(std::string_view uri, bool allow_empty_object) {
  constexpr std::string_view kScheme = "rados://";
  OC_EXPECT(uri.starts_with(kScheme), invalid, "'{}' is not a rados://pool/object URI", uri);
  const std::string_view rest = uri.substr(kScheme.size());
  const size_t slash = rest.find('/');
  OC_EXPECT(slash != std::string_view::npos && slash > 0, invalid,
            "'{}': a rados URI is rados://pool/object", uri);
  RadosUri out{std::string(rest.substr(0, slash)), std::string(rest.substr(slash + 1))};
  OC_EXPECT(allow_empty_object || !out.object.empty(), invalid, "'{}' names no object", uri);
  OC_EXPECT(out.object.find('\0') == std::string::npos && out.pool.find('\0') == std::string::npos,
            invalid, "'{}' holds a NUL byte", uri);
  return out;
}

Error rados_error(int rc, std::string_view what) {
  const int e = rc < 0 ? -rc : rc;
  Errc code = Errc::io;
  if (e == ENOENT) code = Errc::not_found;
  if (e == EPERM || e == EACCES) code = Errc::denied;
  if (e == ETIMEDOUT) code = Errc::timeout;
  return Error(code, fmt::format("{}: {}", what, std::strerror(e)), __FILE__, __LINE__, e);
}

namespace {

// librados takes these options as whole seconds, in text: rounded up, so a knob under a second
// is one second rather than 0 (which means "never time out").
std::string seconds(uint32_t ms) { return std::to_string((uint64_t{ms} + 999) / 1000); }

// Reads and writes go to the OSDs in pieces no larger than this: under the OSD's message cap
// (osd_max_write_size is 90 MiB by default) whatever a file's segment sizes.
constexpr uint64_t kMaxOpBytes = uint64_t{32} << 20;

class Completion {
 public:
  Completion() { (void)rados_aio_create_completion2(nullptr, nullptr, &c_); }
  ~Completion() {
    if (c_) {
      rados_aio_wait_for_complete(c_);
      rados_aio_release(c_);
    }
  }
  Completion(const Completion&) = delete;
  Completion& operator=(const Completion&) = delete;
  [[nodiscard]] bool ok() const { return c_ != nullptr; }
  [[nodiscard]] rados_completion_t get() const { return c_; }
  [[nodiscard]] int wait() {
    rados_aio_wait_for_complete(c_);
    return rados_aio_get_return_value(c_);
  }

 private:
  rados_completion_t c_ = nullptr;
};

class CallImpl final : public RadosPool::Call {
 public:
  explicit CallImpl(std::string in) : in_(std::move(in)) {}
  ~CallImpl() override {
    if (!done_) (void)wait();
    if (op_) rados_release_read_op(op_);
  }
  Result<void> start(rados_ioctx_t io, const std::string& object, const std::string& cls,
                     const std::string& method) {
    OC_EXPECT(comp_.ok(), out_of_memory, "no RADOS completion for {}", object);
    op_ = rados_create_read_op();
    OC_EXPECT(op_ != nullptr, out_of_memory, "no RADOS read op for {}", object);
    rados_read_op_exec(op_, cls.c_str(), method.c_str(), in_.data(), in_.size(), &out_, &out_len_,
                       &prval_);
    const int rc = rados_aio_read_op_operate(op_, io, comp_.get(), object.c_str(), 0);
    if (rc < 0) {
      done_ = true;
      return rados_error(rc, fmt::format("{}.{} on {}", cls, method, object));
    }
    return {};
  }
  std::pair<std::string, int> wait() override {
    if (done_) return {std::string(), -EALREADY};
    done_ = true;
    const int rc = comp_.wait();
    std::pair<std::string, int> r{std::string(), rc < 0 ? rc : prval_};
    if (r.second >= 0 && out_ != nullptr) r.first.assign(out_, out_len_);
    if (r.second > 0) r.second = 0;
    if (out_ != nullptr) rados_buffer_free(out_);
    out_ = nullptr;
    return r;
  }

 private:
  std::string in_;  // librados reads it until the call completes
  Completion comp_;
  rados_read_op_t op_ = nullptr;
  char* out_ = nullptr;
  size_t out_len_ = 0;
  int prval_ = 0;
  bool done_ = false;
};

class PoolImpl final : public RadosPool {
 public:
  PoolImpl(std::string name, rados_ioctx_t io) : name_(std::move(name)), io_(io) {}
  // The context lives as long as the connection: a forked child abandons both (their
  // threads are gone), so nothing here is torn down.
  const std::string& name() const override { return name_; }

  Result<uint64_t> stat(const std::string& object) override {
    uint64_t size = 0;
    time_t mtime = 0;
    const int rc = rados_stat(io_, object.c_str(), &size, &mtime);
    if (rc < 0) return rados_error(rc, fmt::format("rados://{}/{}", name_, object));
    return size;
  }

  Result<void> read(const std::string& object, std::span<const format::ByteRange> ranges,
                    std::span<uint8_t* const> out) override {
    struct Piece {
      uint64_t offset;
      size_t length;
      uint8_t* dst;
    };
    std::vector<Piece> pieces;
    for (size_t i = 0; i < ranges.size(); ++i) {
      for (uint64_t done = 0; done < ranges[i].length; done += kMaxOpBytes) {
        const uint64_t n = std::min(kMaxOpBytes, ranges[i].length - done);
        pieces.push_back({ranges[i].offset + done, static_cast<size_t>(n), out[i] + done});
      }
    }
    const size_t window = std::max<size_t>(defaults().rados_ops_in_flight, 1);
    for (size_t first = 0; first < pieces.size(); first += window) {
      const size_t last = std::min(pieces.size(), first + window);
      std::vector<std::unique_ptr<Completion>> comps;
      Result<void> status{};
      for (size_t k = first; k < last; ++k) {
        auto c = std::make_unique<Completion>();
        if (!c->ok()) {
          status = OC_ERROR(Errc::out_of_memory, "no RADOS completion");
          break;
        }
        const int rc =
            rados_aio_read(io_, object.c_str(), c->get(), reinterpret_cast<char*>(pieces[k].dst),
                           pieces[k].length, pieces[k].offset);
        if (rc < 0) {
          status = rados_error(rc, fmt::format("reading rados://{}/{}", name_, object));
          break;
        }
        comps.push_back(std::move(c));
      }
      // Every started read is waited for before its buffer may go away, failed batch or not.
      for (size_t k = 0; k < comps.size(); ++k) {
        const int rc = comps[k]->wait();
        if (!status.ok()) continue;
        const Piece& p = pieces[first + k];
        if (rc < 0) {
          status = rados_error(rc, fmt::format("reading rados://{}/{}", name_, object));
        } else if (static_cast<size_t>(rc) != p.length) {
          status = OC_ERROR(Errc::corrupt, "rados://{}/{}: {} bytes at {} where {} were asked",
                            name_, object, rc, p.offset, p.length);
        }
      }
      OC_TRY(status);
    }
    return {};
  }

  Result<void> write(const std::string& object, uint64_t size,
                     const std::function<Result<size_t>(std::span<uint8_t>)>& next_chunk) override {
    std::vector<uint8_t> chunk(static_cast<size_t>(std::min<uint64_t>(size, kMaxOpBytes)));
    uint64_t offset = 0;
    do {
      const size_t want = static_cast<size_t>(std::min<uint64_t>(size - offset, kMaxOpBytes));
      size_t have = 0;
      while (have < want) {
        OC_ASSIGN_OR_RETURN(size_t n,
                            next_chunk(std::span<uint8_t>(chunk).subspan(have, want - have)));
        OC_EXPECT(n > 0, io, "rados://{}/{}: the source ended after {} of {} bytes", name_, object,
                  offset + have, size);
        have += n;
      }
      const char* data = reinterpret_cast<const char*>(chunk.data());
      // The first piece replaces whatever the object held; the rest extend it.
      const int rc = offset == 0 ? rados_write_full(io_, object.c_str(), data, want)
                                 : rados_write(io_, object.c_str(), data, want, offset);
      if (rc < 0) return rados_error(rc, fmt::format("writing rados://{}/{}", name_, object));
      offset += want;
    } while (offset < size);
    return {};
  }

  Result<std::vector<std::string>> list(uint64_t max_entries) override {
    rados_list_ctx_t ctx = nullptr;
    int rc = rados_nobjects_list_open(io_, &ctx);
    if (rc < 0) return rados_error(rc, fmt::format("listing pool {}", name_));
    std::vector<std::string> out;
    Result<std::vector<std::string>> result = std::vector<std::string>{};
    while (true) {
      const char* entry = nullptr;
      size_t entry_size = 0;
      rc = rados_nobjects_list_next2(ctx, &entry, nullptr, nullptr, &entry_size, nullptr, nullptr);
      if (rc == -ENOENT) break;
      if (rc < 0) {
        result = rados_error(rc, fmt::format("listing pool {}", name_));
        break;
      }
      if (out.size() >= max_entries) {
        result = OC_ERROR(Errc::invalid, "pool {} holds more than {} objects", name_, max_entries);
        break;
      }
      out.emplace_back(entry, entry_size);
    }
    rados_nobjects_list_close(ctx);
    if (!result.ok()) return result;
    return out;
  }

  Result<std::unique_ptr<Call>> exec_async(const std::string& object, const std::string& cls,
                                           const std::string& method, std::string in) override {
    auto call = std::make_unique<CallImpl>(std::move(in));
    OC_TRY(call->start(io_, object, cls, method));
    return std::unique_ptr<Call>(std::move(call));
  }

 private:
  std::string name_;
  rados_ioctx_t io_;
};

struct Connection {
  rados_t cluster = nullptr;
  pid_t pid = 0;
  std::map<std::string, std::shared_ptr<PoolImpl>> pools;
};

std::mutex connection_mu;
Connection* connection = nullptr;  // abandoned, never freed, in a forked child

Result<rados_t> connect() {
  rados_t c = nullptr;
  int rc = rados_create(&c, nullptr);
  if (rc < 0) return rados_error(rc, "creating a Ceph client");
  auto fail = [&](int code, std::string_view what) {
    rados_shutdown(c);
    return rados_error(code, what);
  };
  const char* conf = std::getenv("CEPH_CONF");
  rc = rados_conf_read_file(c, nullptr);
  if (rc < 0) {
    return fail(rc, conf ? fmt::format("reading CEPH_CONF={}", conf)
                         : std::string("no ceph.conf (set CEPH_CONF)"));
  }
  const Defaults& d = defaults();
  for (const auto& [k, v] : {std::pair{"client_mount_timeout", seconds(d.rados_connect_timeout_ms)},
                             std::pair{"rados_mon_op_timeout", seconds(d.rados_connect_timeout_ms)},
                             std::pair{"rados_osd_op_timeout", seconds(d.rados_op_timeout_ms)}}) {
    rc = rados_conf_set(c, k, v.c_str());
    if (rc < 0) return fail(rc, fmt::format("setting the Ceph option {}", k));
  }
  rc = rados_conf_parse_env(c, nullptr);  // CEPH_ARGS: --id, --keyring, any option
  if (rc < 0) return fail(rc, "parsing CEPH_ARGS");
  rc = rados_connect(c);
  if (rc < 0) return fail(rc, "connecting to the Ceph cluster");
  return c;
}

}  // namespace

Result<std::shared_ptr<RadosPool>> rados_pool(const std::string& name) {
  std::lock_guard lock(connection_mu);
  if (connection == nullptr || connection->pid != ::getpid()) {
    OC_ASSIGN_OR_RETURN(rados_t c, connect());
    connection = new Connection{c, ::getpid(), {}};
  }
  auto it = connection->pools.find(name);
  if (it != connection->pools.end()) return std::shared_ptr<RadosPool>(it->second);
  rados_ioctx_t io = nullptr;
  const int rc = rados_ioctx_create(connection->cluster, name.c_str(), &io);
  if (rc < 0) return rados_error(rc, fmt::format("opening pool {}", name));
  auto pool = std::make_shared<PoolImpl>(name, io);
  connection->pools.emplace(name, pool);
  return std::shared_ptr<RadosPool>(pool);
}

namespace {

// An object's merged reads, as librados reads (net/rados.hpp RadosPool::read) into new buffers.
class RadosReader final : public format::RangeReader {
 public:
  RadosReader(std::shared_ptr<RadosPool> pool, RadosUri uri, uint64_t size)
      : RangeReader({size, uri.str(), "object", format::CoalesceOptions::object_store()}),
        pool_(std::move(pool)),
        uri_(std::move(uri)) {}

  Result<std::vector<format::Buffer>> read_merged(
      std::span<const format::ByteRange> reads) override {
    std::vector<format::Buffer> merged;
    std::vector<uint8_t*> dst;
    merged.reserve(reads.size());
    for (const auto& r : reads) {
      merged.push_back(format::Buffer::allocate_for_overwrite(static_cast<size_t>(r.length)));
      dst.push_back(merged.back().mutable_data());
    }
    OC_TRY(pool_->read(uri_.object, reads, dst));
    return merged;
  }

 private:
  std::shared_ptr<RadosPool> pool_;
  RadosUri uri_;
};

}  // namespace

Result<std::vector<std::string>> names_under(RadosPool& pool, const std::string& prefix,
                                             uint64_t max_entries) {
  OC_ASSIGN_OR_RETURN(auto all, pool.list(max_entries));
  std::vector<std::string> out;
  for (auto& n : all) {
    if (n.starts_with(prefix)) out.push_back(std::move(n));
  }
  std::sort(out.begin(), out.end());
  return out;
}

Result<std::shared_ptr<format::SegmentSource>> open_rados_source(const RadosUri& uri) {
  OC_ASSIGN_OR_RETURN(auto pool, rados_pool(uri.pool));
  OC_ASSIGN_OR_RETURN(uint64_t size, pool->stat(uri.object));
  return format::coalesced_source(std::make_unique<RadosReader>(std::move(pool), uri, size));
}

}  // namespace oc::net
