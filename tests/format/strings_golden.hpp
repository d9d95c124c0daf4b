// SPDX-License-Identifier: Apache-2.0
// Golden cases written by tests/format/golden/gen_strings.py and gen_onpair.py: their `.expected`
// format (zstd-compressed row records, see gen_strings.py) and the comparison of a decoded column
// with it.
#pragma once

#include <zstd.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <string>
#include <vector>

#include "format/string_views.hpp"
#include "tests/format/golden.hpp"

namespace oc::test::strings_golden {

/// One row as the oracle decoded it: valid or null, and its bytes (a string's UTF-8 or binary
/// bytes, a primitive's little-endian bytes).
struct Row {
  bool valid = false;
  std::string bytes;
  bool operator==(const Row&) const = default;
};

struct Case {
  ArrayView root;
  std::vector<Row> rows;
};

/// Inflates the zstd frame of a `.expected` file into its records (format in gen_strings.py).
inline std::vector<Row> parse_expected(const std::string& compressed) {
  const unsigned long long size = ZSTD_getFrameContentSize(compressed.data(), compressed.size());
  REQUIRE(size != ZSTD_CONTENTSIZE_UNKNOWN);
  REQUIRE(size != ZSTD_CONTENTSIZE_ERROR);
  std::string records(size, '\0');
  REQUIRE(ZSTD_decompress(records.data(), records.size(), compressed.data(), compressed.size()) ==
          size);
  std::vector<Row> rows;
  for (size_t at = 0; at < records.size();) {
    REQUIRE(records.size() - at >= 5);
    Row row;
    row.valid = records[at] != 0;
    uint32_t n = 0;
    std::memcpy(&n, records.data() + at + 1, 4);
    at += 5;
    REQUIRE(records.size() - at >= n);
    row.bytes = records.substr(at, n);
    at += n;
    rows.push_back(std::move(row));
  }
  return rows;
}

/// Loads and parses golden case @p name; fails the calling test if it is missing or malformed.
inline Case load(const std::string& name) {
  INFO("golden case " << name);
  ArrayView root = golden::load_tree(name);
  return {std::move(root), parse_expected(golden::read_file(golden::file(name, ".expected")))};
}

/// Row @p i of a decoded column, in the form of the expected records.
inline Row row_of(const format::Column& c, uint64_t i) {
  Row row;
  row.valid = c.is_valid(i);
  if (!row.valid) return row;
  const size_t width = format::fixed_width_of(*c.dtype);
  if (width != 0) {
    row.bytes.assign(reinterpret_cast<const char*>(c.buffers[0].data()) + (c.offset + i) * width,
                     width);
  } else {
    row.bytes = std::string(format::string_at(c, i));
  }
  return row;
}

/// Decodes golden case @p name as @p t and checks every row against the oracle.
/// @return the case, for tests that go on to alter its tree.
/// Decodes golden case @p name as @p t, its strings preferred as @p strings (DecodeContext).
inline ColumnPtr decode_as(const Case& g, const DTypePtr& t, format::StringLayout strings) {
  format::DecodeContext ctx;
  ctx.prefer_strings(strings);
  auto c = ctx.decode(g.root, t, g.rows.size());
  if (!c.ok()) FAIL(c.error().to_string());
  return *c;
}

/// Decodes golden case @p name as @p t, with strings preferred as views and as offsets, and
/// checks every row of both against the oracle.
inline Case check(const std::string& name, const DTypePtr& t) {
  INFO("golden case " << name);
  Case g = load(name);
  for (const auto strings : {format::StringLayout::views, format::StringLayout::offsets}) {
    INFO("strings preferred as " << (strings == format::StringLayout::views ? "views" : "offsets"));
    const ColumnPtr c = decode_as(g, t, strings);
    const format::Column& col = *c;
    REQUIRE(col.length == g.rows.size());
    int64_t nulls = 0;
    for (uint64_t i = 0; i < col.length; ++i) {
      INFO("row " << i);
      REQUIRE(row_of(col, i) == g.rows[i]);
      nulls += g.rows[i].valid ? 0 : 1;
    }
    CHECK(col.null_count == nulls);
  }
  return g;
}

}  // namespace oc::test::strings_golden
