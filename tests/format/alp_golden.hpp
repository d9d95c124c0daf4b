// SPDX-License-Identifier: Apache-2.0
// Golden cases written by tests/format/golden/gen_alp.py and gen_fastlanes.py: their `.expected`
// format (typed values, see golden_common.py) and the comparison of a decoded column with it.
#pragma once

#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "tests/format/golden.hpp"

namespace oc::test::alp_golden {

/// The oracle's decoded values (format in golden_common.py, typed_values).
struct Expected {
  std::string type;  ///< a ptype name such as "f64", or "utf8"
  bool nullable = false;
  uint64_t rows = 0;
  std::vector<uint8_t> valid;  ///< one 0/1 byte per row
  std::string values;          ///< fixed width: rows x width bytes; utf8: offsets + bytes
};

struct Case {
  ArrayView root;
  Expected expected;
};

/// Loads and parses golden case @p name; fails the calling test if it is missing or malformed.
inline Case load(const std::string& name) {
  INFO("golden case " << name);
  const ArrayView root = golden::load_tree(name);
  const std::string expected = golden::read_file(golden::file(name, ".expected"));
  const size_t eol = expected.find('\n');
  REQUIRE(eol != std::string::npos);
  Expected e;
  int nullable = 0;
  std::istringstream(expected.substr(0, eol)) >> e.type >> nullable >> e.rows;
  e.nullable = nullable != 0;
  REQUIRE(expected.size() >= eol + 1 + e.rows);
  e.valid.assign(expected.begin() + static_cast<std::ptrdiff_t>(eol + 1),
                 expected.begin() + static_cast<std::ptrdiff_t>(eol + 1 + e.rows));
  e.values = expected.substr(eol + 1 + e.rows);
  return Case{root, std::move(e)};
}

/// The dtype the expected values describe.
inline DTypePtr dtype_of(const Expected& e) {
  if (e.type == "utf8") return DType::make_utf8(e.nullable);
  for (uint8_t p = 0; p <= static_cast<uint8_t>(PType::f64); ++p) {
    if (format::ptype_name(static_cast<PType>(p)) == e.type) {
      return DType::make_primitive(static_cast<PType>(p), e.nullable);
    }
  }
  FAIL("unknown expected type " << e.type);
  return nullptr;
}

/// Checks @p c against @p e row by row: validity, then the exact bits of each valid value (so
/// NaN payloads and -0.0 count) or its string.
inline void check_rows(const format::Column& c, const Expected& e) {
  REQUIRE(c.length == e.rows);
  std::vector<uint8_t> valid(c.length);
  for (uint64_t i = 0; i < c.length; ++i) valid[i] = c.is_valid(i) ? 1 : 0;
  CHECK(valid == e.valid);
  if (e.type == "utf8") {
    const auto strings = strings_of(c);
    const char* offsets = e.values.data();
    for (uint64_t i = 0; i < e.rows; ++i) {
      if (!e.valid[i]) continue;
      uint32_t begin = 0, end = 0;
      std::memcpy(&begin, offsets + 4 * i, 4);
      std::memcpy(&end, offsets + 4 * (i + 1), 4);
      INFO("row " << i);
      CHECK(strings[i] == e.values.substr(4 * (e.rows + 1) + begin, end - begin));
    }
    return;
  }
  const size_t width = format::fixed_width_of(*c.dtype);
  REQUIRE(e.values.size() == e.rows * width);
  const uint8_t* got = c.buffers[0].data() + c.offset * width;
  uint64_t mismatches = 0, first = 0;
  for (uint64_t i = 0; i < e.rows; ++i) {
    if (e.valid[i] && std::memcmp(got + i * width, e.values.data() + i * width, width) != 0) {
      if (mismatches++ == 0) first = i;
    }
  }
  INFO("first mismatching row " << first);
  CHECK(mismatches == 0);
}

/// Decodes golden case @p name as the dtype of its expected values and checks every row.
/// @return the decoded column.
inline ColumnPtr check(const std::string& name) {
  Case g = load(name);
  INFO("golden case " << name);
  const DTypePtr t = dtype_of(g.expected);
  auto c = decode(g.root, t, g.expected.rows);
  if (!c.ok()) FAIL(c.error().to_string());
  CHECK(*(*c)->dtype == *t);
  check_rows(**c, g.expected);
  return *c;
}

}  // namespace oc::test::alp_golden
