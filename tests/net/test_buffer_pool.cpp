// SPDX-License-Identifier: Apache-2.0
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <thread>
#include <vector>

#include "net/buffer_pool.hpp"

using oc::net::BufferPool;
using oc::net::Lease;

namespace {

constexpr size_t kMiB = size_t{1} << 20;

Lease take(BufferPool& pool, size_t n) {
  auto r = pool.acquire(n);
  REQUIRE(r.ok());
  return std::move(r).value();
}

bool page_aligned(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % sysconf(_SC_PAGESIZE) == 0;
}

}  // namespace

TEST_CASE("pool leases are page-aligned, disjoint and pinned", "[net]") {
  BufferPool pool(8 * kMiB);
  std::vector<Lease> leases;
  for (size_t n : {size_t{1}, size_t{4096}, size_t{100000}, kMiB, 3 * kMiB})
    leases.push_back(take(pool, n));
  std::sort(leases.begin(), leases.end(),
            [](const Lease& a, const Lease& b) { return a.data() < b.data(); });
  for (size_t i = 0; i < leases.size(); ++i) {
    CHECK(leases[i].pinned());
    CHECK(page_aligned(leases[i].data()));
    if (i > 0) CHECK(leases[i - 1].data() + leases[i - 1].size() <= leases[i].data());
  }
  CHECK(pool.counters().in_use >= 4 * kMiB);
  CHECK(pool.counters().fallback_leases == 0);
}

TEST_CASE("pool leases return on drop and are reused", "[net]") {
  BufferPool pool(4 * kMiB);
  std::byte* first = nullptr;
  {
    Lease a = take(pool, kMiB);
    first = a.data();
    std::shared_ptr<void> keep = a.owner();
    a = Lease();
    CHECK(pool.counters().in_use == kMiB);  // still owned through keep
  }
  CHECK(pool.counters().in_use == 0);
  Lease b = take(pool, kMiB);
  CHECK(b.data() == first);
}

TEST_CASE("a full pool serves fallback leases and counts them", "[net]") {
  BufferPool pool(2 * kMiB);
  Lease all = take(pool, pool.counters().capacity);
  CHECK(all.pinned());
  Lease extra = take(pool, 3 * kMiB);
  CHECK(!extra.pinned());
  CHECK(page_aligned(extra.data()));
  std::fill(extra.bytes().begin(), extra.bytes().end(), std::byte{7});  // writable
  CHECK(pool.counters().fallback_leases == 1);
  CHECK(pool.fixed_slot(extra.data(), 1).buf_index == -1);
}

TEST_CASE("a pool of capacity 0 serves only fallback leases", "[net]") {
  BufferPool pool(0);
  CHECK(pool.registration().empty());
  Lease a = take(pool, 10000);
  CHECK(!a.pinned());
  CHECK(pool.counters().capacity == 0);
  CHECK(pool.counters().fallback_leases == 1);
  CHECK(!pool.acquire(0).ok());
}

TEST_CASE("fixed_slot finds the registered piece, split at 1 GiB", "[net]") {
  // Only address space: nothing is touched, so this costs no memory.
  BufferPool pool(1536 * kMiB);
  REQUIRE(pool.registration().size() == 2);
  CHECK(pool.registration()[0].iov_len == 1024 * kMiB);
  CHECK(pool.registration()[1].iov_len == 512 * kMiB);
  Lease low = take(pool, 1024 * kMiB);
  Lease high = take(pool, kMiB);
  auto s0 = pool.fixed_slot(low.data() + 10, 100);
  CHECK(s0.buf_index == 0);
  CHECK(s0.base == pool.registration()[0].iov_base);
  auto s1 = pool.fixed_slot(high.data(), high.size());
  CHECK(s1.buf_index == 1);
  CHECK(s1.base == pool.registration()[1].iov_base);
  CHECK(pool.fixed_slot(low.data() + low.size() - 10, 20).buf_index == -1);  // straddles pieces
  int outside = 0;
  CHECK(pool.fixed_slot(&outside, sizeof outside).buf_index == -1);
}

TEST_CASE("pool acquire and release from many threads", "[net]") {
  BufferPool pool(16 * kMiB);
  std::atomic<bool> shared{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&pool, &shared, t] {
      for (int i = 0; i < 500; ++i) {
        auto r = pool.acquire(size_t(1 + (i * 7919 + t * 104729) % (3 * kMiB)));
        if (!r.ok()) continue;
        auto bytes = r->bytes();
        const auto tag = static_cast<std::byte>(t * 16 + i % 16);
        bytes.front() = tag;
        bytes.back() = tag;
        std::this_thread::yield();
        if (bytes.front() != tag || bytes.back() != tag) shared = true;
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(!shared);
  CHECK(pool.counters().in_use == 0);
  // Everything coalesced back: the whole region is one lease again.
  Lease whole = take(pool, pool.counters().capacity);
  CHECK(whole.pinned());
}
