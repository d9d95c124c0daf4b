// SPDX-License-Identifier: Apache-2.0
#include "net/buffer_pool.hpp"

#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cstring>
#include <map>
#include <mutex>
#include <vector>

#include "config/defaults.hpp"
#include "config/log.hpp"
#include "onecopy_build_config.h"

#if OC_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace oc::net {
namespace {

// Allocation unit: large enough that the free list stays short for multi-MiB response bodies,
// a multiple of every page size so each lease starts page-aligned.
constexpr size_t kGranule = size_t{64} << 10;
// The region is sized in huge pages so MAP_HUGETLB can back it exactly.
constexpr size_t kHugePage = size_t{2} << 20;
// io_uring refuses a single registered buffer larger than 1 GiB.
constexpr size_t kMaxRegistered = size_t{1} << 30;

size_t round_up(size_t n, size_t unit) { return (n + unit - 1) / unit * unit; }

// The mapped region and its allocator. Shared by the pool and every outstanding lease, so a
// lease that outlives its pool still returns into live bookkeeping.
struct Region {
  std::byte* base = nullptr;
  size_t capacity = 0;
  bool hugepages = false;
  bool cuda_registered = false;
  std::vector<iovec> registration;

  std::mutex mu;
  std::map<size_t, size_t> free;  // offset -> length; disjoint, never adjacent (coalesced)
  uint64_t in_use = 0;
  uint64_t fallback_leases = 0;

  explicit Region(size_t bytes);
  ~Region();
  Region(const Region&) = delete;
  Region& operator=(const Region&) = delete;

  // First fit. @return the offset of @p len bytes, or capacity when nothing fits.
  size_t take(size_t len) {
    std::lock_guard lock(mu);
    for (auto it = free.begin(); it != free.end(); ++it) {
      if (it->second < len) continue;
      const auto [offset, have] = *it;
      free.erase(it);
      if (have > len) free.emplace(offset + len, have - len);
      in_use += len;
      return offset;
    }
    return capacity;
  }

  void give(size_t offset, size_t len) {
    std::lock_guard lock(mu);
    in_use -= len;
    auto next = free.lower_bound(offset);
    if (next != free.begin()) {
      auto prev = std::prev(next);
      if (prev->first + prev->second == offset) {
        offset = prev->first;
        len += prev->second;
        free.erase(prev);
      }
    }
    if (next != free.end() && offset + len == next->first) {
      len += next->second;
      free.erase(next);
    }
    free.emplace(offset, len);
  }
};

void cuda_register(Region& r) {
#if OC_HAVE_CUDA
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    cudaGetLastError();  // clear the sticky "no device" error for later callers
    return;
  }
  const cudaError_t e = cudaHostRegister(r.base, r.capacity, cudaHostRegisterDefault);
  if (e != cudaSuccess) {
    cudaGetLastError();
    log::get().info("net: cudaHostRegister of the {} byte pool failed: {}; GPU copies will stage",
                    r.capacity, cudaGetErrorString(e));
    return;
  }
  r.cuda_registered = true;
#else
  (void)r;
#endif
}

Region::Region(size_t bytes) {
  if (bytes == 0) return;
  const size_t len = round_up(bytes, kHugePage);
  // Explicit huge pages first (fewest TLB misses, and io_uring/CUDA pin fewer pages); without a
  // hugetlb reservation the kernel refuses, and transparent huge pages are the next best thing.
  void* p =
      mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
  hugepages = p != MAP_FAILED;
  if (!hugepages) {
    p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      log::get().warn("net: cannot map a {} byte buffer pool ({}); every lease falls back", len,
                      std::strerror(errno));
      return;
    }
    madvise(p, len, MADV_HUGEPAGE);  // advisory: failure just means 4 KiB pages
  }
  base = static_cast<std::byte*>(p);
  capacity = len;
  free.emplace(0, len);
  for (size_t off = 0; off < len; off += kMaxRegistered) {
    registration.push_back(iovec{base + off, std::min(kMaxRegistered, len - off)});
  }
  cuda_register(*this);
}

Region::~Region() {
#if OC_HAVE_CUDA
  if (cuda_registered) cudaHostUnregister(base);
#endif
  if (base != nullptr) munmap(base, capacity);
}

// A lease outside the pool when it is full: correct, merely not registered.
Result<std::shared_ptr<void>> map_fallback(size_t bytes) {
  const size_t len = round_up(bytes, static_cast<size_t>(sysconf(_SC_PAGESIZE)));
  void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  OC_EXPECT(p != MAP_FAILED, out_of_memory, "cannot map a {} byte fallback buffer: {}", len,
            std::strerror(errno));
  return std::shared_ptr<void>(p, [len](void* q) { munmap(q, len); });
}

}  // namespace

struct BufferPool::State {
  std::shared_ptr<Region> region;
};

BufferPool::BufferPool(size_t capacity)
    : state_(std::make_unique<State>(State{std::make_shared<Region>(capacity)})) {}

BufferPool::~BufferPool() = default;

BufferPool& BufferPool::global() {
  // Leaked on purpose: thread-local rings keep the region registered until their threads exit,
  // which may be after static destructors run.
  static BufferPool* pool = new BufferPool(defaults().net_pool_bytes);
  return *pool;
}

Result<Lease> BufferPool::acquire(size_t bytes) {
  OC_EXPECT(bytes > 0, invalid, "buffer pool: cannot lease 0 bytes");
  Region& r = *state_->region;
  Lease lease;
  lease.size_ = bytes;
  const size_t len = round_up(bytes, kGranule);
  const size_t offset = len <= r.capacity ? r.take(len) : r.capacity;
  if (offset < r.capacity) {
    lease.data_ = r.base + offset;
    lease.pinned_ = true;
    lease.owner_ = std::shared_ptr<void>(
        lease.data_, [region = state_->region, offset, len](void*) { region->give(offset, len); });
    return lease;
  }
  OC_ASSIGN_OR_RETURN(lease.owner_, map_fallback(bytes));
  lease.data_ = static_cast<std::byte*>(lease.owner_.get());
  std::lock_guard lock(r.mu);
  ++r.fallback_leases;
  return lease;
}

FixedSlot BufferPool::fixed_slot(const void* p, size_t n) const noexcept {
  const Region& r = *state_->region;
  const auto* b = static_cast<const std::byte*>(p);
  if (r.base == nullptr || b < r.base || b >= r.base + r.capacity) return {};
  const size_t index = static_cast<size_t>(b - r.base) / kMaxRegistered;
  const iovec& piece = r.registration[index];
  auto* piece_base = static_cast<std::byte*>(piece.iov_base);
  if (n > static_cast<size_t>(piece_base + piece.iov_len - b)) return {};
  return FixedSlot{static_cast<int>(index), piece_base};
}

std::span<const iovec> BufferPool::registration() const noexcept {
  return state_->region->registration;
}

PoolCounters BufferPool::counters() const {
  Region& r = *state_->region;
  std::lock_guard lock(r.mu);
  return PoolCounters{r.capacity, r.in_use, r.fallback_leases, r.hugepages, r.cuda_registered};
}

}  // namespace oc::net
