// SPDX-License-Identifier: Apache-2.0
#include "daemon/slab_arena.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <new>
#include <set>

namespace oc::daemon {
namespace {

// The deleter of a slab range handed out as a buffer's owner: the range goes back to its slab
// when the last buffer over it is dropped, on whichever thread that happens. `locate` finds
// it again with std::get_deleter, which is how a buffer is known to lie in a slab.
struct RangeRelease {
  std::shared_ptr<Slab> slab;
  uint64_t offset = 0;
  void operator()(void*) const noexcept { (void)slab->free(offset); }
};

// The heap fallback's deleter: a distinct type marks decoder output that found no room.
struct ArenaHeapFree {
  void operator()(void* p) const noexcept { std::free(p); }
};

std::shared_ptr<void> range_owner(const std::shared_ptr<Slab>& slab, uint64_t offset) {
  return std::shared_ptr<void>(slab->base() + offset, RangeRelease{slab, offset});
}

}  // namespace

void SlabArena::add(std::shared_ptr<Slab> slab) {
  std::lock_guard lock(mu_);
  slabs_.push_back(std::move(slab));
}

void SlabArena::remove(uint64_t id) {
  std::lock_guard lock(mu_);
  std::erase_if(slabs_, [&](const std::shared_ptr<Slab>& s) { return s->id() == id; });
}

format::Buffer SlabArena::allocate(size_t bytes) {
  {
    std::lock_guard lock(mu_);
    for (const auto& slab : slabs_) {
      if (auto at = slab->allocate(bytes)) {
        // The owner is made before anything can throw: a failed make gives the range back.
        std::shared_ptr<void> owner;
        try {
          owner = range_owner(slab, *at);
        } catch (...) {
          (void)slab->free(*at);
          throw;
        }
        return format::Buffer::wrap(std::move(owner), slab->base() + *at, bytes);
      }
    }
  }
  void* p = std::aligned_alloc(64, bytes);
  if (p == nullptr) throw std::bad_alloc();
  std::shared_ptr<void> owner(p, ArenaHeapFree{});
  heap_bytes_ += bytes;
  return format::Buffer::wrap(std::move(owner), static_cast<uint8_t*>(p), bytes);
}

uint64_t SlabArena::free_bytes() const {
  std::lock_guard lock(mu_);
  uint64_t free = 0;
  for (const auto& slab : slabs_) free += slab->bytes() - slab->used();
  return free;
}

std::optional<SlabArena::Where> SlabArena::locate(const format::Buffer& b) {
  const auto* r = std::get_deleter<RangeRelease>(b.owner());
  if (r == nullptr) return std::nullopt;
  return Where{r->slab, static_cast<uint64_t>(b.data() - r->slab->base())};
}

bool SlabArena::decoded_here(const format::Buffer& b) {
  return std::get_deleter<RangeRelease>(b.owner()) != nullptr ||
         std::get_deleter<ArenaHeapFree>(b.owner()) != nullptr;
}

bool SlabArena::holds(const Slab* slab) const {
  std::lock_guard lock(mu_);
  return std::any_of(slabs_.begin(), slabs_.end(), [&](const auto& s) { return s.get() == slab; });
}

std::optional<InPlace> settle_in_place(BatchLayout& layout, const SlabArena& arena) {
  // The slab holding most of the batch's bytes keeps them where they are.
  std::vector<std::optional<SlabArena::Where>> where(layout.sources.size());
  std::map<const Slab*, uint64_t> bytes_in;
  for (size_t i = 0; i < layout.sources.size(); ++i) {
    const format::Buffer* b = layout.sources[i];
    if (b == nullptr || b->empty()) continue;
    where[i] = SlabArena::locate(*b);
    if (where[i]) bytes_in[where[i]->slab.get()] += b->size();
  }
  // Only a slab of this client's (the arena's) may carry its batch.
  for (auto it = bytes_in.begin(); it != bytes_in.end();) {
    it = arena.holds(it->first) ? std::next(it) : bytes_in.erase(it);
  }
  const auto most =
      std::max_element(bytes_in.begin(), bytes_in.end(),
                       [](const auto& a, const auto& b) { return a.second < b.second; });
  if (most == bytes_in.end()) return std::nullopt;
  std::shared_ptr<Slab> slab;
  for (const auto& w : where) {
    if (w && w->slab.get() == most->first) {
      slab = w->slab;
      break;
    }
  }
  // One range for every buffer that lies elsewhere, each 64-byte aligned in it.
  std::vector<uint64_t> at(layout.sources.size(), 0);
  uint64_t copy_bytes = 0;
  for (size_t i = 0; i < layout.sources.size(); ++i) {
    const format::Buffer* b = layout.sources[i];
    if (b == nullptr || b->empty() || (where[i] && where[i]->slab == slab)) continue;
    at[i] = copy_bytes;
    copy_bytes = range_aligned(copy_bytes + b->size());
  }
  InPlace out;
  out.slab = slab;
  uint64_t copies_at = 0;
  if (copy_bytes > 0) {
    const auto range = slab->allocate(copy_bytes);
    if (!range) return std::nullopt;
    copies_at = *range;
    try {
      out.hold.push_back(range_owner(slab, copies_at));
    } catch (...) {
      (void)slab->free(copies_at);
      return std::nullopt;
    }
  }
  // Where each buffer is in the slab now, and the range spanning them.
  uint64_t lo = UINT64_MAX, hi = 0;
  std::vector<uint64_t> pos(layout.sources.size(), 0);
  for (size_t i = 0; i < layout.sources.size(); ++i) {
    const format::Buffer* b = layout.sources[i];
    if (b == nullptr || b->empty()) continue;
    pos[i] = where[i] && where[i]->slab == slab ? where[i]->offset : copies_at + at[i];
    lo = std::min(lo, pos[i]);
    hi = std::max(hi, pos[i] + b->size());
  }
  lo = lo / kRangeAlign * kRangeAlign;  // the client keeps buffers' alignment from here
  out.offset = lo;
  std::set<const void*> held;
  uint64_t pinned = 0;
  size_t i = 0;
  for (SlabArray& a : layout.arrays) {
    for (fbs::BufferRef& r : a.buffers) {
      const format::Buffer* b = layout.sources[i];
      if (b != nullptr && !b->empty()) {
        r = fbs::BufferRef(pos[i] - lo, b->size(), true);
        pinned += range_aligned(b->size());
        if (where[i] && where[i]->slab == slab) {
          out.in_place += b->size();
          if (held.insert(b->owner().get()).second) out.hold.push_back(b->owner());
        } else {
          std::memcpy(slab->base() + pos[i], b->data(), b->size());
          out.copied += b->size();
          if (SlabArena::decoded_here(*b)) out.copied_after_decode += b->size();
        }
      } else {
        r = fbs::BufferRef(0, 0, b != nullptr);
      }
      ++i;
    }
  }
  layout.bytes = hi - lo;
  layout.pinned = pinned;
  layout.copies.clear();
  layout.sources.clear();
  layout.batch.reset();
  return out;
}

}  // namespace oc::daemon
