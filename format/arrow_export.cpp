// SPDX-License-Identifier: Apache-2.0
#include "format/arrow_export.hpp"

#include <cerrno>
#include <string>
#include <vector>

namespace oc::format {
namespace {

// ---- schema
// --------------------------------------------------------------------------------------

struct SchemaPrivate {
  std::string format, name;
  std::vector<ArrowSchema> child_storage;
  std::vector<ArrowSchema*> child_ptrs;
};

void release_schema(ArrowSchema* s) {
  if (s == nullptr || s->release == nullptr) return;
  auto* p = static_cast<SchemaPrivate*>(s->private_data);
  for (auto& c : p->child_storage) {
    if (c.release) c.release(&c);
  }
  delete p;
  s->release = nullptr;
}

// ---- array
// ---------------------------------------------------------------------------------------

struct ArrayPrivate {
  std::vector<Buffer> buffers;  // keep the memory alive
  std::vector<const void*> pointers;
  std::vector<ArrowArray> child_storage;
  std::vector<ArrowArray*> child_ptrs;
};

void release_array(ArrowArray* a) {
  if (a == nullptr || a->release == nullptr) return;
  auto* p = static_cast<ArrayPrivate*>(a->private_data);
  for (auto& c : p->child_storage) {
    if (c.release) c.release(&c);
  }
  delete p;
  a->release = nullptr;
}

// @p c's buffers and children, sharing its memory.
ArrayParts parts_of(const Column& c) {
  ArrayParts out;
  out.length = static_cast<int64_t>(c.length);
  out.offset = static_cast<int64_t>(c.offset);
  if (c.dtype->storage().kind == TypeKind::null) {
    out.null_count = out.length;
  } else {
    out.null_count = c.null_count;
    out.buffers.push_back(c.validity);
    out.buffers.insert(out.buffers.end(), c.buffers.begin(), c.buffers.end());
  }
  for (const auto& child : c.children) out.children.push_back(parts_of(*child));
  return out;
}

// ---- stream
// --------------------------------------------------------------------------------------

struct StreamPrivate {
  std::unique_ptr<Scan> scan;
  std::string last_error;
};

int stream_get_schema(ArrowArrayStream* s, ArrowSchema* out) {
  auto* p = static_cast<StreamPrivate*>(s->private_data);
  auto r = export_schema(*p->scan->dtype(), "", p->scan->strings(), out);
  if (!r.ok()) {
    p->last_error = r.error().to_string();
    return EINVAL;
  }
  return 0;
}

int stream_get_next(ArrowArrayStream* s, ArrowArray* out) {
  auto* p = static_cast<StreamPrivate*>(s->private_data);
  auto batch = p->scan->next();
  if (!batch.ok()) {
    p->last_error = batch.error().to_string();
    return batch.error().code() == Errc::io ? EIO : EINVAL;
  }
  if (!*batch) {
    out->release = nullptr;  // end of stream
    return 0;
  }
  auto r = export_array(**batch, out);
  if (!r.ok()) {
    p->last_error = r.error().to_string();
    return EINVAL;
  }
  return 0;
}

const char* stream_last_error(ArrowArrayStream* s) {
  auto* p = static_cast<StreamPrivate*>(s->private_data);
  return p->last_error.empty() ? nullptr : p->last_error.c_str();
}

void stream_release(ArrowArrayStream* s) {
  if (s == nullptr || s->release == nullptr) return;
  delete static_cast<StreamPrivate*>(s->private_data);
  s->release = nullptr;
}

}  // namespace

Result<void> export_schema(const DType& t, const std::string& name, StringLayout strings,
                           ArrowSchema* out) {
  auto p = std::make_unique<SchemaPrivate>();
  OC_ASSIGN_OR_RETURN(p->format, arrow_format(t, strings));
  p->name = name;
  const DType& s = t.storage();
  std::vector<std::pair<const DType*, std::string>> kids;
  if (s.kind == TypeKind::struct_) {
    for (size_t i = 0; i < s.children.size(); ++i)
      kids.emplace_back(s.children[i].get(), s.names[i]);
  } else if (s.kind == TypeKind::list || s.kind == TypeKind::fixed_size_list) {
    kids.emplace_back(s.children[0].get(), "item");
  }
  p->child_storage.resize(kids.size());
  for (size_t i = 0; i < kids.size(); ++i) {
    auto r = export_schema(*kids[i].first, kids[i].second, strings, &p->child_storage[i]);
    if (!r.ok()) {
      for (size_t j = 0; j < i; ++j) p->child_storage[j].release(&p->child_storage[j]);
      p->child_storage.clear();
      return r;
    }
    p->child_ptrs.push_back(&p->child_storage[i]);
  }
  *out = ArrowSchema{};
  out->format = p->format.c_str();
  out->name = p->name.c_str();
  out->flags = t.nullable ? ARROW_FLAG_NULLABLE : 0;
  out->n_children = static_cast<int64_t>(kids.size());
  out->children = p->child_ptrs.empty() ? nullptr : p->child_ptrs.data();
  out->release = release_schema;
  out->private_data = p.release();
  return {};
}

Result<void> export_array(const ColumnPtr& c, ArrowArray* out) {
  export_parts(parts_of(*c), out);
  return {};
}

void export_parts(ArrayParts parts, ArrowArray* out) {
  auto p = std::make_unique<ArrayPrivate>();
  p->buffers = std::move(parts.buffers);
  for (const Buffer& b : p->buffers) p->pointers.push_back(b.empty() ? nullptr : b.data());
  p->child_storage.resize(parts.children.size());
  for (size_t i = 0; i < parts.children.size(); ++i) {
    export_parts(std::move(parts.children[i]), &p->child_storage[i]);
    p->child_ptrs.push_back(&p->child_storage[i]);
  }
  *out = ArrowArray{};
  out->length = parts.length;
  out->null_count = parts.null_count;
  out->offset = parts.offset;
  out->n_buffers = static_cast<int64_t>(p->pointers.size());
  out->n_children = static_cast<int64_t>(p->child_ptrs.size());
  out->buffers = p->pointers.empty() ? nullptr : p->pointers.data();
  out->children = p->child_ptrs.empty() ? nullptr : p->child_ptrs.data();
  out->release = release_array;
  out->private_data = p.release();
}

void export_stream(std::unique_ptr<Scan> scan, ArrowArrayStream* out) {
  auto* p = new StreamPrivate{std::move(scan), {}};
  out->get_schema = stream_get_schema;
  out->get_next = stream_get_next;
  out->get_last_error = stream_last_error;
  out->release = stream_release;
  out->private_data = p;
}

}  // namespace oc::format
