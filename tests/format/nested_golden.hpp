// SPDX-License-Identifier: Apache-2.0
// Golden segments written by tests/format/golden/gen_nested.py, and the row rendering their
// `.expected` files use (see that script): helpers for the nested, decimal, temporal and chunked
// encoding tests.
#pragma once

#include <cstring>
#include <string>
#include <vector>

#include "format/encodings/decimal.hpp"
#include "tests/format/golden.hpp"

namespace oc::test::nested_golden {

/// Arrow's decimal128 value type (GCC's extension type, named once so -Wpedantic stays quiet).
__extension__ typedef __int128 Int128;

/// Renders row @p i of @p c as gen_nested.py does.
inline std::string render_row(const format::Column& c, uint64_t i) {
  using format::TypeKind;
  if (!c.is_valid(i)) return "null";
  const DType& t = c.dtype->storage();
  const uint64_t at = c.offset + i;
  auto render_range = [](const format::Column& e, uint64_t begin, uint64_t end) {
    std::string out = "[";
    for (uint64_t k = begin; k < end; ++k) out += (k > begin ? "," : "") + render_row(e, k);
    return out + "]";
  };
  switch (t.kind) {
    case TypeKind::boolean:
      return format::bitmap_get(c.buffers[0].data(), at) ? "true" : "false";
    case TypeKind::primitive: {
      const uint8_t* p = c.buffers[0].data() + at * format::ptype_width(t.ptype);
      switch (t.ptype) {
        case PType::u8:
          return std::to_string(*p);
        case PType::u16:
          return std::to_string(format::load_le<uint16_t>(p));
        case PType::u32:
          return std::to_string(format::load_le<uint32_t>(p));
        case PType::u64:
          return std::to_string(format::load_le<uint64_t>(p));
        case PType::i8:
          return std::to_string(static_cast<int8_t>(*p));
        case PType::i16:
          return std::to_string(format::load_le<int16_t>(p));
        case PType::i32:
          return std::to_string(format::load_le<int32_t>(p));
        case PType::i64:
          return std::to_string(format::load_le<int64_t>(p));
        default:
          return "<float>";
      }
    }
    case TypeKind::decimal: {
      const size_t w = format::encodings::decimal_arrow_width(t.precision);
      const uint8_t* p = c.buffers[0].data() + at * w;
      std::string hex;
      for (size_t b = 0; b < w; ++b) hex += fmt::format("{:02x}", p[b]);
      return hex;
    }
    case TypeKind::list: {
      const int32_t* o = c.buffers[0].as<int32_t>();
      return render_range(*c.children[0], static_cast<uint64_t>(o[at]),
                          static_cast<uint64_t>(o[at + 1]));
    }
    case TypeKind::fixed_size_list:
      return render_range(*c.children[0], at * t.list_size, (at + 1) * t.list_size);
    default:
      return "<" + t.to_string() + ">";
  }
}

/// Every row of @p c rendered.
inline std::vector<std::string> render_rows(const format::Column& c) {
  std::vector<std::string> rows;
  for (uint64_t i = 0; i < c.length; ++i) rows.push_back(render_row(c, i));
  return rows;
}

/// Decodes golden case @p name as @p t and checks every row against the oracle's values.
/// @return the decoded column.
inline ColumnPtr check_golden(const std::string& name, const DTypePtr& t) {
  INFO("golden case " << name);
  const ArrayView root = golden::load_tree(name);
  const auto expected = golden::read_lines(golden::file(name, ".expected"));
  auto c = decode(root, t, expected.size());
  if (!c.ok()) FAIL(c.error().to_string());
  CHECK(render_rows(**c) == expected);
  CHECK(*(*c)->dtype == *t);
  return *c;
}

// ---- dtypes the fixtures and DType lack ---------------------------------------------------------

inline DTypePtr make_list(DTypePtr element, bool nullable) {
  auto t = std::make_shared<DType>();
  t->kind = format::TypeKind::list;
  t->nullable = nullable;
  t->children.push_back(std::move(element));
  return t;
}

inline DTypePtr make_fixed_size_list(DTypePtr element, uint32_t size, bool nullable) {
  auto t = std::make_shared<DType>();
  t->kind = format::TypeKind::fixed_size_list;
  t->nullable = nullable;
  t->list_size = size;
  t->children.push_back(std::move(element));
  return t;
}

inline DTypePtr make_decimal(uint8_t precision, int8_t scale, bool nullable) {
  auto t = std::make_shared<DType>();
  t->kind = format::TypeKind::decimal;
  t->nullable = nullable;
  t->precision = precision;
  t->scale = scale;
  return t;
}

/// A `vortex.date`, `vortex.time` or `vortex.timestamp` extension over @p storage; @p tz is
/// timestamp-only (metadata: unit byte, then u16 LE zone length and the zone).
inline DTypePtr make_temporal(const std::string& id, format::TimeUnit unit, PType storage,
                              bool nullable, const std::string& tz = {}) {
  auto t = std::make_shared<DType>();
  t->kind = format::TypeKind::extension;
  t->nullable = nullable;
  t->ext_id = id;
  t->ext_metadata.push_back(static_cast<uint8_t>(unit));
  if (id == "vortex.timestamp") {
    t->ext_metadata.push_back(static_cast<uint8_t>(tz.size() & 0xff));
    t->ext_metadata.push_back(static_cast<uint8_t>(tz.size() >> 8));
    t->ext_metadata.insert(t->ext_metadata.end(), tz.begin(), tz.end());
  }
  t->children.push_back(DType::make_primitive(storage, nullable));
  return t;
}

}  // namespace oc::test::nested_golden
