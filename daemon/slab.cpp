// SPDX-License-Identifier: Apache-2.0
#include "daemon/slab.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <utility>

namespace oc::daemon {

Slab::Slab(Slab&& o) noexcept
    : fd(std::exchange(o.fd, -1)),
      bytes(o.bytes),
      copied(o.copied),
      rows(o.rows),
      arrays(std::move(o.arrays)) {}

Slab& Slab::operator=(Slab&& o) noexcept {
  if (this != &o) {
    if (fd >= 0) ::close(fd);
    fd = std::exchange(o.fd, -1);
    bytes = o.bytes;
    copied = o.copied;
    rows = o.rows;
    arrays = std::move(o.arrays);
  }
  return *this;
}

Slab::~Slab() {
  if (fd >= 0) ::close(fd);
}

Result<Slab> fill_slab(const format::Column& batch) {
  struct Node {
    const format::Column* col;
    std::vector<std::pair<uint64_t, const format::Buffer*>> bufs;  // slab offset, buffer
  };
  std::vector<Node> nodes;
  uint64_t size = 0;
  auto place = [&](const format::Buffer& b) {
    size = (size + 63) & ~uint64_t{63};
    const uint64_t at = size;
    size += b.size();
    return at;
  };
  auto walk = [&](auto& self, const format::Column& col) -> void {
    Node n{&col, {}};
    if (col.dtype->storage().kind != format::TypeKind::null) {  // null arrays have no buffers
      n.bufs.emplace_back(col.validity.empty() ? 0 : place(col.validity), &col.validity);
      for (const auto& b : col.buffers) n.bufs.emplace_back(place(b), &b);
    }
    nodes.push_back(std::move(n));
    for (const auto& child : col.children) self(self, *child);
  };
  walk(walk, batch);

  Slab slab;
  slab.fd = ::memfd_create("onecopy-slab", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (slab.fd < 0) return Error(Errc::io, "memfd_create", __FILE__, __LINE__, errno);
  if (size > 0) {
    if (::ftruncate(slab.fd, static_cast<off_t>(size)) != 0) {
      return Error(Errc::io, "ftruncate of a slab", __FILE__, __LINE__, errno);
    }
    void* base = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, slab.fd, 0);
    if (base == MAP_FAILED) return Error(Errc::io, "mmap of a slab", __FILE__, __LINE__, errno);
    for (const Node& n : nodes) {
      for (const auto& [at, b] : n.bufs) {
        if (b->empty()) continue;
        std::memcpy(static_cast<uint8_t*>(base) + at, b->data(), b->size());
        slab.copied += b->size();
      }
    }
    ::munmap(base, size);
  }
  // Sealed: the client may map it read-only and trust that nobody changes or shrinks it.
  ::fcntl(slab.fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL);
  slab.bytes = size;
  slab.rows = batch.length;

  for (const Node& n : nodes) {
    SlabArray a;
    for (size_t i = 0; i < n.bufs.size(); ++i) {
      const auto& [at, b] = n.bufs[i];
      a.buffers.emplace_back(at, b->size(), !(i == 0 && b->empty()));  // absent validity
    }
    const auto& col = *n.col;
    const bool is_null = col.dtype->kind == format::TypeKind::null;
    a.length = static_cast<int64_t>(col.length);
    a.null_count = is_null ? static_cast<int64_t>(col.length) : col.null_count;
    a.offset = static_cast<int64_t>(col.offset);
    a.n_children = static_cast<uint32_t>(col.children.size());
    slab.arrays.push_back(std::move(a));
  }
  return slab;
}

}  // namespace oc::daemon
