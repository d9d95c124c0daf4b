// SPDX-License-Identifier: Apache-2.0
#include "daemon/slab.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <utility>

namespace oc::daemon {
namespace {

constexpr uint64_t kHugePage = uint64_t{2} << 20;  // x86-64 and arm64 default hugepage size

std::atomic<uint64_t> g_open_fds{0};

uint64_t round_up(uint64_t n, uint64_t to) { return (n + to - 1) / to * to; }

struct Mapped {
  int fd = -1;
  uint64_t bytes = 0;
  uint8_t* base = nullptr;
};

// One attempt with the given memfd flags; every failure undoes what it did.
Result<Mapped> make_memfd(uint64_t bytes, unsigned flags) {
  Mapped m;
  m.fd = ::memfd_create("onecopy-slab", MFD_CLOEXEC | MFD_ALLOW_SEALING | flags);
  if (m.fd < 0) return Error(Errc::io, "memfd_create", __FILE__, __LINE__, errno);
  m.bytes = bytes;
  void* base = MAP_FAILED;
  // A hugetlb mapping reserves its pages at mmap time (ENOMEM when the pool is short), so the
  // daemon cannot fault on it later either.
  if (::ftruncate(m.fd, static_cast<off_t>(bytes)) == 0) {
    base = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, m.fd, 0);
  }
  const int err = errno;
  if (base == MAP_FAILED) {
    ::close(m.fd);
    return Error(Errc::io, fmt::format("slab of {} bytes", bytes), __FILE__, __LINE__, err);
  }
  m.base = static_cast<uint8_t*>(base);
  // FUTURE_WRITE, not WRITE: our own writable mapping stays, later writable ones are refused.
  if (::fcntl(m.fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_FUTURE_WRITE | F_SEAL_SEAL) !=
      0) {
    const int serr = errno;
    ::munmap(base, bytes);
    ::close(m.fd);
    return Error(Errc::io, "sealing a slab", __FILE__, __LINE__, serr);
  }
  return m;
}

}  // namespace

BatchLayout lay_out(format::ColumnPtr batch) {
  BatchLayout out;
  auto place = [&](const format::Buffer& b) {
    out.bytes = range_aligned(out.bytes);
    const uint64_t at = out.bytes;
    out.bytes += b.size();
    if (!b.empty()) out.copies.emplace_back(at, &b);
    return at;
  };
  auto walk = [&](auto& self, const format::Column& col) -> void {
    SlabArray a;
    if (col.dtype->storage().kind != format::TypeKind::null) {  // null arrays have no buffers
      // An absent validity bitmap is {0, 0, present=false}.
      const uint64_t v = col.validity.empty() ? 0 : place(col.validity);
      a.buffers.emplace_back(v, col.validity.size(), !col.validity.empty());
      out.sources.push_back(col.validity.empty() ? nullptr : &col.validity);
      for (const auto& b : col.buffers) {
        a.buffers.emplace_back(place(b), b.size(), true);
        out.sources.push_back(&b);
      }
    }
    const bool is_null = col.dtype->kind == format::TypeKind::null;
    a.length = static_cast<int64_t>(col.length);
    a.null_count = is_null ? static_cast<int64_t>(col.length) : col.null_count;
    a.offset = static_cast<int64_t>(col.offset);
    a.n_children = static_cast<uint32_t>(col.children.size());
    out.arrays.push_back(std::move(a));
    for (const auto& child : col.children) self(self, *child);
  };
  walk(walk, *batch);
  out.pinned = range_aligned(out.bytes);
  out.rows = batch->length;
  out.batch = std::move(batch);
  return out;
}

uint64_t copy_batch(BatchLayout& layout, uint8_t* dst) {
  uint64_t copied = 0;
  for (const auto& [at, b] : layout.copies) {
    std::memcpy(dst + at, b->data(), b->size());
    copied += b->size();
  }
  layout.copies.clear();  // they point into the batch
  layout.sources.clear();
  layout.batch.reset();
  return copied;
}

Result<std::shared_ptr<Slab>> Slab::create(uint64_t id, uint64_t bytes, bool dedicated) {
  bool huge = true;
  auto m = make_memfd(round_up(bytes, kHugePage), MFD_HUGETLB);
  if (!m.ok()) {
    // No hugepages reserved (vm.nr_hugepages), or a kernel without hugetlb memfd sealing.
    huge = false;
    m = make_memfd(round_up(bytes, static_cast<uint64_t>(::sysconf(_SC_PAGESIZE))), 0);
  }
  if (!m.ok()) return std::move(m.error());
  return std::shared_ptr<Slab>(new Slab(id, m->fd, m->bytes, m->base, huge, dedicated));
}

Slab::Slab(uint64_t id, int fd, uint64_t bytes, uint8_t* base, bool hugepages, bool dedicated)
    : ranges_(bytes),
      id_(id),
      fd_(fd),
      bytes_(bytes),
      base_(base),
      hugepages_(hugepages),
      dedicated_(dedicated) {
  ++g_open_fds;
}

Slab::~Slab() {
  ::munmap(base_, bytes_);
  close_fd();
}

void Slab::close_fd() noexcept {
  if (fd_ < 0) return;
  ::close(fd_);
  fd_ = -1;
  --g_open_fds;
}

std::optional<uint64_t> Slab::allocate(uint64_t bytes) {
  std::lock_guard lock(mu_);
  return ranges_.allocate(bytes);
}

bool Slab::free(uint64_t offset) {
  std::lock_guard lock(mu_);
  return ranges_.free(offset);
}

uint64_t Slab::used() const {
  std::lock_guard lock(mu_);
  return ranges_.used();
}

uint64_t Slab::footprint(uint64_t bytes) noexcept { return round_up(bytes, kHugePage); }

uint64_t Slab::open_fds() noexcept { return g_open_fds.load(); }

}  // namespace oc::daemon
