// SPDX-License-Identifier: Apache-2.0
// Helpers for format unit tests: building ArrayView nodes by hand and reading Columns back.
#pragma once

#include <cstring>
#include <string>
#include <vector>

#include "format/column.hpp"
#include "format/decode.hpp"
#include "format/string_views.hpp"

namespace oc::test {

using format::ArrayView;
using format::Buffer;
using format::ColumnPtr;
using format::DType;
using format::DTypePtr;
using format::PType;

template <class T>
Buffer buffer_of(const std::vector<T>& v) {
  return Buffer::copy_of({reinterpret_cast<const uint8_t*>(v.data()), v.size() * sizeof(T)});
}

inline Buffer bytes_of(const std::string& s) {
  return Buffer::copy_of({reinterpret_cast<const uint8_t*>(s.data()), s.size()});
}

/// A node with encoding @p id, serialized protobuf metadata @p meta, buffers and children.
inline ArrayView node(std::string id, std::string meta = {}, std::vector<Buffer> buffers = {},
                      std::vector<ArrayView> children = {}) {
  ArrayView v;
  v.encoding = std::move(id);
  v.metadata.assign(meta.begin(), meta.end());
  v.buffers = std::move(buffers);
  v.children = std::move(children);
  return v;
}

template <class T>
ArrayView primitive_node(const std::vector<T>& values) {
  return node("vortex.primitive", {}, {buffer_of(values)});
}

/// A vortex.bool node from a vector of bools (LSB-first bitmap, bit offset 0).
inline ArrayView bool_node(const std::vector<bool>& bits) {
  std::vector<uint8_t> packed((bits.size() + 7) / 8);
  for (size_t i = 0; i < bits.size(); ++i)
    if (bits[i]) packed[i / 8] |= uint8_t(1u << (i % 8));
  return node("vortex.bool", {}, {buffer_of(packed)});
}

/// Decodes @p n as @p t with @p len rows in a fresh context.
inline Result<ColumnPtr> decode(const ArrayView& n, const DTypePtr& t, uint64_t len) {
  format::DecodeContext ctx;
  return ctx.decode(n, t, len);
}

/// Logical values of a fixed-width column (respects offset).
template <class T>
std::vector<T> values_of(const format::Column& c) {
  std::vector<T> out(c.length);
  if (c.length != 0)
    std::memcpy(out.data(), c.values<T>(), c.length * sizeof(T));  // no null memcpy
  return out;
}

inline std::vector<bool> validity_of(const format::Column& c) {
  std::vector<bool> out(c.length);
  for (uint64_t i = 0; i < c.length; ++i) out[i] = c.is_valid(i);
  return out;
}

inline std::vector<bool> bools_of(const format::Column& c) {
  std::vector<bool> out(c.length);
  for (uint64_t i = 0; i < c.length; ++i)
    out[i] = format::bitmap_get(c.buffers[0].data(), c.offset + i);
  return out;
}

inline std::vector<std::string> strings_of(const format::Column& c) {
  std::vector<std::string> out(c.length);
  for (uint64_t i = 0; i < c.length; ++i) out[i] = std::string(format::string_at(c, i));
  return out;
}

// A row rendered as text, recursively: equal text means equal logical values. Values of
// fixed-width types print as their bytes.
inline std::string row_text(const format::Column& c, uint64_t i) {
  if (!c.is_valid(i)) return "null";
  const DType& s = c.dtype->storage();
  switch (s.kind) {
    case format::TypeKind::null:
      return "null";
    case format::TypeKind::boolean:
      return format::bitmap_get(c.buffers[0].data(), c.offset + i) ? "t" : "f";
    case format::TypeKind::utf8:
    case format::TypeKind::binary:
      return std::string(format::string_at(c, i));
    case format::TypeKind::list: {
      const int32_t* o = c.offsets();
      std::string out = "[";
      for (int32_t k = o[i]; k < o[i + 1]; ++k)
        out += row_text(*c.children[0], static_cast<uint64_t>(k)) + ",";
      return out + "]";
    }
    case format::TypeKind::fixed_size_list: {
      std::string out = "[";
      for (uint32_t k = 0; k < s.list_size; ++k) {
        out += row_text(*c.children[0], (c.offset + i) * s.list_size + k) + ",";
      }
      return out + "]";
    }
    case format::TypeKind::struct_: {
      std::string out = "{";
      for (const auto& f : c.children) out += row_text(*f, c.offset + i) + ",";
      return out + "}";
    }
    default: {
      const size_t w = format::fixed_width_of(s);
      std::string out;
      for (size_t k = 0; k < w; ++k)
        out += std::to_string(c.buffers[0].data()[(c.offset + i) * w + k]) + ".";
      return out;
    }
  }
}

inline std::vector<std::string> rows_of(const format::Column& c) {
  std::vector<std::string> out;
  for (uint64_t i = 0; i < c.length; ++i) out.push_back(row_text(c, i));
  return out;
}

}  // namespace oc::test
