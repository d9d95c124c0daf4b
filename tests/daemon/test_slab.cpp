// SPDX-License-Identifier: Apache-2.0
// Client slabs: the daemon writes through its own mapping, while the seals refuse every way a
// client could write to, shrink or punch a slab (which would make the daemon's mapping fault).
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>

#include "daemon/slab.hpp"

using oc::daemon::Slab;

TEST_CASE("slab: the daemon writes, a client can only read", "[daemon][slab]") {
  auto made = Slab::create(7, 3 << 20, /*dedicated=*/false);
  REQUIRE(made.ok());
  const auto& slab = *made;
  CHECK(slab->id() == 7);
  CHECK(slab->bytes() >= (3u << 20));
  // Its ranges cover it all: one range of the whole slab fits, and none past it.
  const auto whole = slab->allocate(slab->bytes());
  REQUIRE(whole.has_value());
  CHECK(*whole == 0);
  CHECK_FALSE(slab->allocate(1).has_value());
  CHECK(slab->free(0));
  CHECK(slab->empty());
  std::memcpy(slab->base() + 4096, "onecopy", 8);

  // What a client that received the fd can do: map it read-only, and see the bytes.
  void* ro = ::mmap(nullptr, slab->bytes(), PROT_READ, MAP_SHARED, slab->fd(), 0);
  REQUIRE(ro != MAP_FAILED);
  CHECK(std::memcmp(static_cast<uint8_t*>(ro) + 4096, "onecopy", 8) == 0);
  // ... and not make that mapping writable, map it writable, write, resize or punch it.
  CHECK(::mprotect(ro, 4096, PROT_READ | PROT_WRITE) != 0);
  CHECK(::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, slab->fd(), 0) == MAP_FAILED);
  CHECK(::pwrite(slab->fd(), "x", 1, 0) < 0);
  CHECK(::ftruncate(slab->fd(), 4096) != 0);
  CHECK(::ftruncate(slab->fd(), static_cast<off_t>(slab->bytes() * 2)) != 0);
  CHECK(::fallocate(slab->fd(), FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 4096) != 0);
  CHECK(::fcntl(slab->fd(), F_ADD_SEALS, F_SEAL_WRITE) != 0);  // F_SEAL_SEAL: no more seals
  // A private writable mapping is allowed, but writes to it stay private (copy on write).
  void* priv = ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE, slab->fd(), 4096);
  if (priv != MAP_FAILED) {
    static_cast<char*>(priv)[0] = 'X';
    CHECK(slab->base()[4096] == 'o');
    ::munmap(priv, 4096);
  }
  // The daemon still writes through its own mapping, and the client sees it.
  slab->base()[4097] = 'N';
  CHECK(static_cast<uint8_t*>(ro)[4097] == 'N');
  ::munmap(ro, slab->bytes());
}

TEST_CASE("slab: sizes round up to whole pages", "[daemon][slab]") {
  auto made = Slab::create(1, 5000, /*dedicated=*/true);
  REQUIRE(made.ok());
  CHECK((*made)->dedicated());
  CHECK((*made)->bytes() % static_cast<uint64_t>(::sysconf(_SC_PAGESIZE)) == 0);
  CHECK((*made)->bytes() >= 5000);
  if ((*made)->hugepages()) CHECK((*made)->bytes() % (2u << 20) == 0);
}
