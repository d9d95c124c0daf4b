// SPDX-License-Identifier: Apache-2.0
// Columns for the Arrow IPC writer and reader tests (test_arrow_ipc.cpp, test_arrow_ipc_read.cpp):
// primitives and strings from optionals (nullopt is a null row), lists, fixed-size lists and
// struct batches over them.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "format/column.hpp"
#include "tests/format/fixtures.hpp"

namespace oc::test {

template <class T>
inline ColumnPtr prim(PType p, const std::vector<std::optional<T>>& v) {
  auto c = std::make_shared<format::Column>();
  bool nullable = false;
  for (const auto& x : v) nullable = nullable || !x;
  c->dtype = DType::make_primitive(p, nullable);
  c->length = v.size();
  std::vector<T> vals(v.size());
  if (nullable) c->validity = format::make_bitmap(v.size(), true);
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i])
      vals[i] = *v[i];
    else {
      format::bitmap_set(c->validity.mutable_data(), i, false);
      ++c->null_count;
    }
  }
  c->buffers = {buffer_of(vals)};
  return c;
}

inline ColumnPtr strs(const std::vector<std::optional<std::string>>& v, bool binary = false) {
  auto c = std::make_shared<format::Column>();
  bool nullable = false;
  for (const auto& s : v) nullable = nullable || !s;
  c->dtype = binary ? DType::make_binary(nullable) : DType::make_utf8(nullable);
  c->length = v.size();
  std::vector<int32_t> offs{0};
  std::string bytes;
  if (nullable) c->validity = format::make_bitmap(v.size(), true);
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i])
      bytes += *v[i];
    else {
      format::bitmap_set(c->validity.mutable_data(), i, false);
      ++c->null_count;
    }
    offs.push_back(static_cast<int32_t>(bytes.size()));
  }
  c->buffers = {buffer_of(offs), bytes_of(bytes)};
  return c;
}

// A list column over @p elements with @p offsets (n + 1 of them), all rows valid.
inline ColumnPtr list_of(ColumnPtr elements, const std::vector<int32_t>& offsets) {
  auto t = std::make_shared<DType>();
  t->kind = format::TypeKind::list;
  t->children = {elements->dtype};
  auto c = std::make_shared<format::Column>();
  c->dtype = t;
  c->length = offsets.size() - 1;
  c->buffers = {buffer_of(offsets)};
  c->children = {std::move(elements)};
  return c;
}

inline ColumnPtr fixed_list_of(ColumnPtr elements, uint32_t size) {
  auto t = std::make_shared<DType>();
  t->kind = format::TypeKind::fixed_size_list;
  t->list_size = size;
  t->children = {elements->dtype};
  auto c = std::make_shared<format::Column>();
  c->dtype = t;
  c->length = elements->length / size;
  c->children = {std::move(elements)};
  return c;
}

// A struct batch (not nullable) of @p fields named f0, f1, ...
inline ColumnPtr batch_of(std::vector<ColumnPtr> fields, uint64_t rows) {
  std::vector<std::string> names;
  std::vector<DTypePtr> types;
  for (size_t i = 0; i < fields.size(); ++i) {
    names.push_back("f" + std::to_string(i));
    types.push_back(fields[i]->dtype);
  }
  auto c = std::make_shared<format::Column>();
  c->dtype = DType::make_struct(std::move(names), std::move(types), false);
  c->length = rows;
  c->children = std::move(fields);
  return c;
}

inline ColumnPtr with_dtype(ColumnPtr c, DTypePtr t) {
  auto out = std::make_shared<format::Column>(*c);
  out->dtype = std::move(t);
  return out;
}

}  // namespace oc::test
