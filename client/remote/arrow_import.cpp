// SPDX-License-Identifier: Apache-2.0
#include "client/remote/arrow_import.hpp"

#include <cstring>

#include "config/checked_size.hpp"
#include "kernels/device_memory.hpp"

namespace oc::client {

// The protocol both sides speak (daemon/wire.hpp, daemon/protocol.fbs, daemon/status.hpp).
using namespace oc::daemon;  // NOLINT(google-build-using-namespace)
namespace {

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

void build_schema_node(const std::vector<SchemaNodeCopy>& nodes, size_t& i, ArrowSchema* out) {
  const SchemaNodeCopy& n = nodes[i++];
  auto* p = new SchemaPrivate;
  p->strings = {n.format, n.name};
  p->kids.resize(n.n_children);
  for (uint32_t c = 0; c < n.n_children; ++c) {
    build_schema_node(nodes, i, &p->kids[c]);
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

struct ArrayPrivate {
  std::shared_ptr<Lease> lease;
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

Result<void> build_array(const fbs::Batch& b, size_t& i, const std::shared_ptr<Lease>& lease,
                         int depth, ArrowArray* out) {
  OC_EXPECT(depth < 64 && b.arrays() && i < b.arrays()->size(), protocol,
            "Batch array tree is malformed");
  const fbs::ArrayNode* n = b.arrays()->Get(static_cast<flatbuffers::uoffset_t>(i++));
  auto p = std::make_unique<ArrayPrivate>();
  p->lease = lease;
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
      OC_EXPECT(r->offset() >= lease->begin && r->offset() - lease->begin <= lease->bytes &&
                    r->length() <= lease->bytes - (r->offset() - lease->begin),
                protocol, "buffer [{}, +{}) outside its batch's range [{}, +{})", r->offset(),
                r->length(), lease->begin, lease->bytes);
      p->buffers.push_back(lease->data() + (r->offset() - lease->begin));
    }
  }
  p->kids.resize(n->n_children());
  for (uint32_t c = 0; c < n->n_children(); ++c) {
    auto r = build_array(b, i, lease, depth + 1, &p->kids[c]);
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

}  // namespace

Result<std::vector<SchemaNodeCopy>> schema_of(const fbs::ScanBegin& begin) {
  OC_EXPECT(begin.schema() && begin.schema()->size() > 0, protocol,
            "onecopyd sent a ScanBegin without a schema");
  std::vector<SchemaNodeCopy> nodes;
  uint64_t expected = 1;
  for (const fbs::SchemaNode* n : *begin.schema()) {
    nodes.push_back({n->format() ? n->format()->str() : "", n->name() ? n->name()->str() : "",
                     n->flags(), n->n_children()});
    expected += n->n_children();
  }
  OC_EXPECT(expected == nodes.size(), protocol, "ScanBegin schema tree is malformed");
  return nodes;
}

void build_schema(const std::vector<SchemaNodeCopy>& nodes, ArrowSchema* out) {
  size_t i = 0;
  build_schema_node(nodes, i, out);
}

Result<void> Lease::copy_out() {
  if (released_ || !slab || on_device) return {};
  if (bytes == 0) {  // nothing to copy: its arrays point at no slab byte
    slab.reset();
    release_now();
    return {};
  }
  constexpr size_t kAlign = 64;
  const size_t skew = begin % kAlign;
  // bytes came from the daemon's message: the size is checked, not trusted.
  const auto total = checked_round_up(saturating_add(bytes, skew), kAlign);
  OC_EXPECT(total.has_value(), out_of_memory,
            "a batch of {} bytes cannot be copied out of its slab", bytes);
  auto* mem = static_cast<uint8_t*>(std::aligned_alloc(kAlign, *total));
  OC_EXPECT(mem != nullptr, out_of_memory, "copying a batch of {} bytes out of its slab", bytes);
  copy_.reset(mem);
  copy_skew_ = skew;
  std::memcpy(mem + skew, static_cast<const uint8_t*>(slab->base) + begin, bytes);
  slab.reset();  // a dedicated slab is unmapped here
  release_now();
  return {};
}

const uint8_t* Lease::data() const {
  if (copy_) return copy_.get() + copy_skew_;
  return slab ? static_cast<const uint8_t*>(slab->base) + begin : nullptr;
}

void Lease::release_now() {
  if (released_) return;
  released_ = true;
  // A kernel the consumer queued may still read the range: the daemon reuses it after Release.
  // A failed wait (the context is gone) leaves nothing running that could read it.
  if (on_device) (void)kernels::wait_for_stream(reinterpret_cast<CUstream_st*>(consumer_stream));
  flatbuffers::FlatBufferBuilder fbb;
  auto rel = fbs::CreateRelease(fbb, lease);
  fbb.Finish(fbs::CreateMessage(fbb, fbs::Body::Release, rel.Union()));
  // A daemon that went away reclaimed the lease already; a forked child never sends.
  (void)conn->send(fbb);
  conn->held_batches -= 1;
  conn->held_bytes -= held;
}

Lease::~Lease() { release_now(); }

Result<void> build_batch(const fbs::Batch& batch, const std::shared_ptr<Lease>& lease,
                         ArrowArray* out) {
  size_t i = 0;
  return build_array(batch, i, lease, 0, out);
}

}  // namespace oc::client
