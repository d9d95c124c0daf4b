// SPDX-License-Identifier: Apache-2.0
// Decoding into a client's slabs: buffers allocated inside an ArenaScope (and in the
// parallel_for items under it) take slab ranges that go back when their last owner goes; a full
// arena falls back to the heap; a batch settles where most of it lies, and only the rest is
// copied, each copy counted as fetched bytes or as decoder output.
#include <catch2/catch.hpp>
#include <cstring>
#include <set>
#include <vector>

#include "daemon/slab_arena.hpp"
#include "format/parallel.hpp"

using namespace oc;
using daemon::SlabArena;

namespace {

std::shared_ptr<daemon::Slab> make(uint64_t id, uint64_t bytes) {
  auto s = daemon::Slab::create(id, bytes, /*dedicated=*/false);
  REQUIRE(s.ok());
  return *s;
}

format::Buffer filled(size_t n, uint8_t seed) {
  format::Buffer b = format::Buffer::allocate_for_overwrite(n);
  for (size_t i = 0; i < n; ++i) b.mutable_data()[i] = static_cast<uint8_t>(seed + i);
  return b;
}

format::ColumnPtr i64_column(std::vector<format::Buffer> bufs, uint64_t rows) {
  auto c = std::make_shared<format::Column>();
  c->dtype = format::DType::make_struct({"a", "b"},
                                        {format::DType::make_primitive(format::PType::i64, false),
                                         format::DType::make_primitive(format::PType::i64, false)},
                                        false);
  c->length = rows;
  for (auto& b : bufs) {
    auto f = std::make_shared<format::Column>();
    f->dtype = c->dtype->children[0];
    f->length = rows;
    f->buffers.push_back(std::move(b));
    c->children.push_back(std::move(f));
  }
  return c;
}

}  // namespace

TEST_CASE("slab arena: buffers decoded in scope live in the slab until their last owner goes",
          "[daemon][slab]") {
  auto arena = std::make_shared<SlabArena>();
  auto slab = make(1, 2 << 20);
  arena->add(slab);
  format::Buffer a;
  {
    format::ArenaScope in_slabs(arena.get());
    a = format::Buffer::allocate(1000);
  }
  const auto where = SlabArena::locate(a);
  REQUIRE(where.has_value());
  CHECK(where->slab == slab);
  CHECK(where->offset % 64 == 0);
  CHECK(SlabArena::decoded_here(a));
  CHECK(slab->used() == 1024);
  CHECK(a.data()[999] == 0);  // allocate() still clears
  format::Buffer slice = a.slice(100, 10);
  REQUIRE(SlabArena::locate(slice).has_value());
  CHECK(SlabArena::locate(slice)->offset == where->offset + 100);
  a = format::Buffer();
  CHECK(slab->used() == 1024);  // the slice still owns it
  slice = format::Buffer();
  CHECK(slab->empty());

  // Outside any scope: the heap, and neither in a slab nor decoder output of an arena.
  format::Buffer heap = format::Buffer::allocate(64);
  CHECK_FALSE(SlabArena::locate(heap).has_value());
  CHECK_FALSE(SlabArena::decoded_here(heap));
}

TEST_CASE("slab arena: parallel_for items allocate in their caller's arena", "[daemon][slab]") {
  auto arena = std::make_shared<SlabArena>();
  auto slab = make(2, 2 << 20);
  arena->add(slab);
  std::vector<format::Buffer> got(16);
  {
    format::ArenaScope in_slabs(arena.get());
    REQUIRE(format::parallel_for(got.size(), format::kParallelFromRows * 4,
                                 [&](size_t i) -> Result<void> {
                                   got[i] = format::Buffer::allocate_for_overwrite(4096);
                                   return {};
                                 })
                .ok());
  }
  std::set<uint64_t> offsets;
  for (const auto& b : got) {
    const auto w = SlabArena::locate(b);
    REQUIRE(w.has_value());
    offsets.insert(w->offset);
  }
  CHECK(offsets.size() == got.size());  // no two share a range
  CHECK(slab->used() == got.size() * 4096);
  got.clear();
  CHECK(slab->empty());
}

TEST_CASE("slab arena: a full arena takes from the heap, and counts it", "[daemon][slab]") {
  auto arena = std::make_shared<SlabArena>();
  auto slab = make(3, 2 << 20);
  arena->add(slab);
  format::ArenaScope in_slabs(arena.get());
  format::Buffer big = format::Buffer::allocate_for_overwrite(slab->bytes() - 64);
  CHECK(SlabArena::locate(big).has_value());
  CHECK(arena->heap_bytes() == 0);
  format::Buffer more = format::Buffer::allocate_for_overwrite(4096);
  CHECK_FALSE(SlabArena::locate(more).has_value());
  CHECK(SlabArena::decoded_here(more));
  CHECK(arena->heap_bytes() == 4096);
  CHECK(arena->free_bytes() == 64);
  arena->remove(3);  // no new ranges there; the one out keeps it mapped
  CHECK(arena->free_bytes() == 0);
  CHECK_FALSE(arena->holds(slab.get()));
  CHECK(SlabArena::locate(big)->slab == slab);
}

TEST_CASE("slab arena: a batch settles where it was decoded, copying only the rest",
          "[daemon][slab]") {
  auto arena = std::make_shared<SlabArena>();
  auto slab = make(4, 2 << 20);
  arena->add(slab);
  constexpr uint64_t kRows = 1000;
  format::Buffer decoded, overflow;
  {
    format::ArenaScope in_slabs(arena.get());
    decoded = filled(kRows * 8, 1);
  }
  const format::Buffer fetched = filled(kRows * 8, 7);  // as a segment read: the heap
  auto layout = daemon::lay_out(i64_column({decoded, fetched}, kRows));
  const uint64_t decoded_at = SlabArena::locate(decoded)->offset;
  auto settled = daemon::settle_in_place(layout, *arena);
  REQUIRE(settled.has_value());
  CHECK(settled->slab == slab);
  CHECK(settled->in_place == kRows * 8);
  CHECK(settled->copied == kRows * 8);
  CHECK(settled->copied_after_decode == 0);  // fetched bytes: the one copy
  CHECK_FALSE(layout.batch);                 // dropped; `hold` keeps what the batch needs
  CHECK(layout.pinned == 2 * kRows * 8);
  // Arrays: the struct (validity only), then a's and b's validity and values.
  REQUIRE(layout.arrays.size() == 3);
  const auto& a = layout.arrays[1].buffers;
  const auto& b = layout.arrays[2].buffers;
  CHECK(settled->offset + a[1].offset() == decoded_at);  // not moved
  CHECK(std::memcmp(slab->base() + settled->offset + a[1].offset(), decoded.data(), kRows * 8) ==
        0);
  CHECK(std::memcmp(slab->base() + settled->offset + b[1].offset(), fetched.data(), kRows * 8) ==
        0);
  CHECK(b[1].offset() + b[1].length() <= layout.bytes);
  CHECK_FALSE(a[0].present());
  // The client's lease holds both ranges; dropping it (and the decoder's own reference) frees them.
  decoded = format::Buffer();
  CHECK(slab->used() == 2 * kRows * 8);
  settled.reset();
  CHECK(slab->empty());

  // Decoder output that found no room is copied too, and counted as such.
  {
    format::ArenaScope in_slabs(arena.get());
    decoded = filled(kRows * 8, 3);
    auto filler = format::Buffer::allocate_for_overwrite(slab->bytes() - slab->used());
    overflow = filled(kRows * 8, 5);  // the heap: the slab is full
    filler = format::Buffer();
  }
  auto second = daemon::lay_out(i64_column({decoded, overflow}, kRows));
  settled = daemon::settle_in_place(second, *arena);
  REQUIRE(settled.has_value());
  CHECK(settled->copied_after_decode == kRows * 8);
}

TEST_CASE("slab arena: a batch with nothing in a slab, or no room for its copies, is not settled",
          "[daemon][slab]") {
  auto arena = std::make_shared<SlabArena>();
  auto slab = make(5, 2 << 20);
  arena->add(slab);
  auto heap_only = daemon::lay_out(i64_column({filled(800, 1), filled(800, 2)}, 100));
  CHECK_FALSE(daemon::settle_in_place(heap_only, *arena).has_value());
  CHECK(heap_only.batch);  // unchanged: it goes the copying way

  format::Buffer in_slab, rest;
  {
    format::ArenaScope in_slabs(arena.get());
    in_slab = filled(slab->bytes() - 64, 1);  // the slab, full
  }
  rest = filled(4096, 2);
  auto no_room = daemon::lay_out(i64_column({in_slab.slice(0, 800), rest.slice(0, 800)}, 100));
  CHECK_FALSE(daemon::settle_in_place(no_room, *arena).has_value());
  CHECK(no_room.batch);

  // A slab that is not this arena's never carries the batch.
  auto other = std::make_shared<SlabArena>();
  auto mine = daemon::lay_out(i64_column({in_slab.slice(0, 800), in_slab.slice(800, 800)}, 100));
  CHECK_FALSE(daemon::settle_in_place(mine, *other).has_value());
}
