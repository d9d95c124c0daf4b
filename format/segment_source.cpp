// SPDX-License-Identifier: Apache-2.0
#include "format/segment_source.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <numeric>

#include "config/defaults.hpp"
#include "config/log.hpp"
#include "format/byte_cache.hpp"
#include "onecopy_build_config.h"

#if OC_HAVE_IO_URING
#include <liburing.h>
#endif

namespace oc::format {

CoalesceOptions CoalesceOptions::local_file() {
  return {defaults().file_coalesce_distance, defaults().file_coalesce_max};
}
CoalesceOptions CoalesceOptions::object_store() {
  return {defaults().object_coalesce_distance, defaults().object_coalesce_max};
}

std::vector<CoalescedRead> coalesce(std::span<const ByteRange> ranges,
                                    const CoalesceOptions& opts) {
  std::vector<size_t> order(ranges.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return ranges[a].offset < ranges[b].offset ||
           (ranges[a].offset == ranges[b].offset && ranges[a].length > ranges[b].length);
  });
  std::vector<CoalescedRead> out;
  for (size_t i : order) {
    const ByteRange& r = ranges[i];
    if (!out.empty()) {
      CoalescedRead& last = out.back();
      const uint64_t end = std::max(last.range.end(), r.end());
      const bool close = r.offset <= last.range.end() + opts.max_gap;
      const bool contained = r.end() <= last.range.end();
      if (contained || (close && end - last.range.offset <= opts.max_read)) {
        last.range.length = end - last.range.offset;
        last.members.push_back(i);
        continue;
      }
    }
    out.push_back({r, {i}});
  }
  return out;
}

Result<void> SegmentSource::read_into(std::span<const ByteRange> ranges,
                                      std::span<uint8_t* const> dsts) {
  OC_EXPECT(ranges.size() == dsts.size(), invalid, "{}: {} ranges to read into {} places", name(),
            ranges.size(), dsts.size());
  return read_each_into(ranges, dsts);
}

Result<void> SegmentSource::read_each_into(std::span<const ByteRange> ranges,
                                           std::span<uint8_t* const> dsts) {
  OC_ASSIGN_OR_RETURN(std::vector<Buffer> bufs, read(ranges));
  for (size_t i = 0; i < ranges.size(); ++i) std::memcpy(dsts[i], bufs[i].data(), ranges[i].length);
  return {};
}

Result<void> RangeReader::read_merged_into(std::span<const ByteRange> reads,
                                           std::span<uint8_t* const> dsts) {
  OC_ASSIGN_OR_RETURN(std::vector<Buffer> bufs, read_merged(reads));
  OC_EXPECT(bufs.size() == reads.size() && dsts.size() == reads.size(), io,
            "{}: {} reads answered {}", identity_.name, reads.size(), bufs.size());
  for (size_t k = 0; k < reads.size(); ++k) std::memcpy(dsts[k], bufs[k].data(), reads[k].length);
  return {};
}

namespace {

// Reads larger than this are split: io_uring and pread take 32-bit-ish lengths in practice and
// smaller pieces keep several requests in flight.
constexpr uint64_t kMaxPiece = uint64_t{1} << 30;

struct Piece {
  uint8_t* dst;
  uint64_t offset;
  uint64_t length;
};

std::atomic<uint64_t> g_local_sources{0};
std::atomic<uint64_t> g_read_rings{0};

#if OC_HAVE_IO_URING
// The calling thread's ring for local reads, set up at its first read and shared by every file
// it reads: concurrent reads of one file (scans side by side, splits decoded in parallel) never
// wait on each other, and no file holds a ring of its own. nullptr where io_uring is refused
// (seccomp profiles, old kernels): pread serves then.
io_uring* thread_ring() {
  struct Ring {
    io_uring ring{};
    pid_t pid = 0;  // the process that set it up; 0: none
    bool refused = false;
    ~Ring() {
      if (pid == ::getpid()) {
        io_uring_queue_exit(&ring);
        --g_read_rings;
      }
    }
  };
  thread_local Ring t;
  if (t.pid != 0 && t.pid != ::getpid()) {
    // A forked child (a DataLoader worker, say) inherited this ring: its memory is shared with
    // the parent's, so using it would race the parent. Drop the child's mapping, make another.
    io_uring_queue_exit(&t.ring);
    t.pid = 0;
    t.refused = false;
  }
  if (t.pid == 0 && !t.refused) {
    const int rc = io_uring_queue_init(defaults().io_queue_depth, &t.ring, 0);
    if (rc == 0) {
      t.pid = ::getpid();
      ++g_read_rings;
    } else {
      t.refused = true;
      log::get().debug("io_uring unavailable ({}); local reads on this thread fall back to pread",
                       -rc);
    }
  }
  return t.pid != 0 ? &t.ring : nullptr;
}
#endif

// The walk every store's source takes (coalesced_source).
class CoalescedSource final : public SegmentSource {
 public:
  explicit CoalescedSource(std::unique_ptr<RangeReader> reader) : reader_(std::move(reader)) {}

  uint64_t size() const override { return reader_->identity().size; }
  const std::string& name() const override { return reader_->identity().name; }
  SourceStats stats() const override {
    std::lock_guard lock(mu_);
    return stats_;
  }

  bool local() const override { return reader_->identity().kind == "file"; }

  Result<std::vector<Buffer>> read(std::span<const ByteRange> ranges) override {
    return read_coalesced(ranges, reader_->identity().coalescing);
  }

  Result<std::vector<Buffer>> read_coalesced(std::span<const ByteRange> ranges,
                                             const CoalesceOptions& opts) override {
    const RangeReader::Identity& id = reader_->identity();
    OC_TRY(check(ranges));
    if (id.version.empty()) return read_store(ranges, opts);  // a local file: the page cache's
    ByteCache& cache = ByteCache::process();
    if (!cache.enabled()) return read_store(ranges, opts);
    // The cache keys what readers ask for (segments, footers), not the merged reads, whose
    // shape changes with every projection and filter.
    return cache.read(id.name, id.version, ranges, [&](std::span<const ByteRange> missing) {
      return read_store(missing, opts);
    });
  }

  Result<void> read_each_into(std::span<const ByteRange> ranges,
                              std::span<uint8_t* const> dsts) override {
    // An object the byte cache may hold is read through it, and copied.
    if (!reader_->identity().version.empty()) return SegmentSource::read_each_into(ranges, dsts);
    OC_TRY(check(ranges));
    OC_TRY(reader_->read_merged_into(ranges, dsts));
    std::lock_guard lock(mu_);
    for (const auto& r : ranges) stats_.bytes_read += r.length;
    stats_.reads += ranges.size();
    return {};
  }

 private:
  // Refuses ranges past the end (a file that points outside itself) and counts the request.
  Result<void> check(std::span<const ByteRange> ranges) {
    const RangeReader::Identity& id = reader_->identity();
    for (const auto& r : ranges) {
      OC_EXPECT(r.offset <= id.size && r.length <= id.size - r.offset, corrupt,
                "{}: range [{}, +{}) is past the end of the {} byte {}", id.name, r.offset,
                r.length, id.size, id.kind);
    }
    std::lock_guard lock(mu_);
    stats_.requests += ranges.size();
    return {};
  }

  // Merges @p ranges, reads them from the store and slices the merged reads.
  Result<std::vector<Buffer>> read_store(std::span<const ByteRange> ranges,
                                         const CoalesceOptions& opts) {
    const RangeReader::Identity& id = reader_->identity();
    const auto plan = coalesce(ranges, opts);
    std::vector<ByteRange> reads;
    reads.reserve(plan.size());
    for (const auto& m : plan) reads.push_back(m.range);
    OC_ASSIGN_OR_RETURN(std::vector<Buffer> merged, reader_->read_merged(reads));
    OC_EXPECT(merged.size() == plan.size(), io, "{}: {} merged reads answered {}", id.name,
              plan.size(), merged.size());
    std::vector<Buffer> out(ranges.size());
    std::lock_guard lock(mu_);
    for (size_t k = 0; k < plan.size(); ++k) {
      for (size_t i : plan[k].members) {
        out[i] = merged[k].slice(ranges[i].offset - plan[k].range.offset, ranges[i].length);
      }
      stats_.bytes_read += plan[k].range.length;
    }
    stats_.reads += plan.size();
    return out;
  }

  std::unique_ptr<RangeReader> reader_;
  mutable std::mutex mu_;
  SourceStats stats_;
};

class LocalFileReader final : public RangeReader {
 public:
  LocalFileReader(int fd, uint64_t size, std::string path)
      : RangeReader({size, std::move(path), "file", CoalesceOptions::local_file()}), fd_(fd) {
    ++g_local_sources;
  }
  ~LocalFileReader() override {
    ::close(fd_);
    --g_local_sources;
  }

  Result<std::vector<Buffer>> read_merged(std::span<const ByteRange> reads) override {
    std::vector<Buffer> merged;
    std::vector<uint8_t*> dsts;
    merged.reserve(reads.size());
    dsts.reserve(reads.size());
    for (const auto& r : reads) {
      merged.push_back(Buffer::allocate_for_overwrite(r.length));
      dsts.push_back(merged.back().mutable_data());
    }
    OC_TRY(read_merged_into(reads, dsts));
    return merged;
  }

  Result<void> read_merged_into(std::span<const ByteRange> reads,
                                std::span<uint8_t* const> dsts) override {
    std::vector<Piece> pieces;
    for (size_t k = 0; k < reads.size(); ++k) {
      const ByteRange& r = reads[k];
      for (uint64_t at = 0; at < r.length; at += kMaxPiece) {
        pieces.push_back({dsts[k] + at, r.offset + at, std::min(kMaxPiece, r.length - at)});
      }
    }
#if OC_HAVE_IO_URING
    if (io_uring* ring = thread_ring()) {
      OC_TRY(read_ring(*ring, pieces));
    } else
#endif
    {
      OC_TRY(read_pread(pieces));
    }
    return {};
  }

 private:
  Result<void> read_pread(std::vector<Piece>& pieces) {
    for (auto& p : pieces) {
      while (p.length > 0) {
        const ssize_t n = ::pread(fd_, p.dst, p.length, static_cast<off_t>(p.offset));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return errno_error(errno, "pread " + identity().name, __FILE__, __LINE__);
        OC_EXPECT(n > 0, corrupt, "{} ended early at offset {} (file truncated?)", identity().name,
                  p.offset);
        p.dst += n;
        p.offset += static_cast<uint64_t>(n);
        p.length -= static_cast<uint64_t>(n);
      }
    }
    return {};
  }

#if OC_HAVE_IO_URING
  // Keeps up to the ring's depth in flight; short reads are resubmitted for the remainder.
  Result<void> read_ring(io_uring& ring, std::vector<Piece>& pieces) {
    size_t next = 0, inflight = 0, done = 0;
    const unsigned depth = ring.sq.ring_entries;
    while (done < pieces.size()) {
      while (next < pieces.size() && inflight < depth) {
        io_uring_sqe* sqe = io_uring_get_sqe(&ring);
        if (sqe == nullptr) break;
        Piece& p = pieces[next];
        io_uring_prep_read(sqe, fd_, p.dst, static_cast<unsigned>(p.length), p.offset);
        io_uring_sqe_set_data64(sqe, next);
        ++next;
        ++inflight;
      }
      int rc = io_uring_submit_and_wait(&ring, 1);
      if (rc < 0 && rc != -EINTR)
        return errno_error(rc, "io_uring_submit " + identity().name, __FILE__, __LINE__);
      io_uring_cqe* cqe = nullptr;
      unsigned head = 0, seen = 0;
      Result<void> status;
      std::vector<size_t> retry;
      io_uring_for_each_cqe(&ring, head, cqe) {
        ++seen;
        --inflight;
        Piece& p = pieces[io_uring_cqe_get_data64(cqe)];
        const int res = cqe->res;
        if (res == -EINTR || res == -EAGAIN) {
          retry.push_back(io_uring_cqe_get_data64(cqe));
        } else if (res < 0) {
          if (status.ok()) status = errno_error(res, "read " + identity().name, __FILE__, __LINE__);
        } else if (res == 0) {
          if (status.ok())
            status =
                OC_ERROR(Errc::corrupt, "{} ended early at offset {}", identity().name, p.offset);
        } else if (static_cast<uint64_t>(res) < p.length) {
          p.dst += res;
          p.offset += static_cast<uint64_t>(res);
          p.length -= static_cast<uint64_t>(res);
          retry.push_back(io_uring_cqe_get_data64(cqe));
        } else {
          ++done;
        }
      }
      io_uring_cq_advance(&ring, seen);
      if (!status.ok()) {
        drain(ring, inflight);
        return status;
      }
      // Resubmit remainders synchronously: rare (signals, huge pages), so simplicity wins.
      for (size_t idx : retry) {
        std::vector<Piece> one{pieces[idx]};
        OC_TRY(read_pread(one));
        ++done;
      }
    }
    return {};
  }

  static void drain(io_uring& ring, size_t inflight) {
    while (inflight > 0) {
      io_uring_cqe* cqe = nullptr;
      if (io_uring_wait_cqe(&ring, &cqe) != 0) break;
      io_uring_cqe_seen(&ring, cqe);
      --inflight;
    }
  }

#endif

  int fd_;
};

class MemorySource final : public SegmentSource {
 public:
  MemorySource(Buffer bytes, std::string name) : bytes_(std::move(bytes)), name_(std::move(name)) {}
  uint64_t size() const override { return bytes_.size(); }
  const std::string& name() const override { return name_; }
  SourceStats stats() const override {
    return {requests_.load(), requests_.load(), bytes_read_.load()};
  }
  bool local() const override { return true; }
  Result<std::vector<Buffer>> read(std::span<const ByteRange> ranges) override {
    std::vector<Buffer> out;
    out.reserve(ranges.size());
    for (const auto& r : ranges) {
      OC_EXPECT(r.offset <= bytes_.size() && r.length <= bytes_.size() - r.offset, corrupt,
                "{}: range [{}, +{}) is past the end of {} bytes", name_, r.offset, r.length,
                bytes_.size());
      // Copied so that each range starts 64-byte aligned, as a real read would.
      out.push_back(Buffer::copy_of(bytes_.span().subspan(r.offset, r.length)));
      bytes_read_ += r.length;
    }
    requests_ += ranges.size();
    return out;
  }

 private:
  Buffer bytes_;
  std::string name_;
  std::atomic<uint64_t> requests_{0}, bytes_read_{0};
};

}  // namespace

namespace {

const char* file_type(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

}  // namespace

Result<UniqueFd> open_readable_file(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
  if (!fd.valid()) {
    const int e = errno;
    if (e == EACCES || e == EPERM) {
      return Error(Errc::denied, "open " + path, __FILE__, __LINE__, e);
    }
    return errno_error(e, "open " + path, __FILE__, __LINE__);
  }
  struct stat st {};
  const int flags = ::fcntl(fd.get(), F_GETFL);
  if (flags < 0 || ::fstat(fd.get(), &st) != 0) {
    return errno_error(errno, "stat " + path, __FILE__, __LINE__);
  }
  OC_EXPECT(S_ISREG(st.st_mode), invalid, "{} is {}, not a Vortex file", path,
            file_type(st.st_mode));
  // O_NONBLOCK only kept the open from waiting on a FIFO; on a regular file it would make
  // io_uring fail cold reads with EAGAIN instead of queueing them.
  (void)::fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK);
  return fd;
}

Result<std::shared_ptr<SegmentSource>> open_local_file(const std::string& path) {
  OC_ASSIGN_OR_RETURN(UniqueFd fd, open_readable_file(path));
  return open_local_fd(fd.release(), path);
}

Result<struct stat> readable_fd_status(int fd, const std::string& name) {
  struct stat st {};
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fstat(fd, &st) != 0)
    return errno_error(errno, "stat " + name, __FILE__, __LINE__);
  OC_EXPECT((flags & O_PATH) == 0 && (flags & O_ACCMODE) != O_WRONLY, invalid,
            "{}: the descriptor is not open for reading", name);
  OC_EXPECT(S_ISREG(st.st_mode), invalid, "{} is {}, not a Vortex file", name,
            file_type(st.st_mode));
  return st;
}

Result<std::shared_ptr<SegmentSource>> open_local_fd(int fd, std::string name) {
  auto st = readable_fd_status(fd, name);
  if (!st.ok()) {
    ::close(fd);
    return std::move(st.error());
  }
  // A descriptor a client passed may still be non-blocking: see open_readable_file.
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0 && (flags & O_NONBLOCK) != 0) (void)::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  return coalesced_source(
      std::make_unique<LocalFileReader>(fd, static_cast<uint64_t>(st->st_size), std::move(name)));
}

std::shared_ptr<SegmentSource> coalesced_source(std::unique_ptr<RangeReader> reader) {
  return std::make_shared<CoalescedSource>(std::move(reader));
}

uint64_t open_local_sources() noexcept { return g_local_sources.load(); }

uint64_t open_read_rings() noexcept { return g_read_rings.load(); }

std::shared_ptr<SegmentSource> memory_source(Buffer bytes, std::string name) {
  return std::make_shared<MemorySource>(std::move(bytes), std::move(name));
}

}  // namespace oc::format
