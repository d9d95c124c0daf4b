// SPDX-License-Identifier: Apache-2.0
// Slice decodes (DecodeContext::decode_slice) return exactly the rows of a full decode, for
// window-aware encodings (decoded partially) and all others (decoded whole, then sliced).
#include <catch2/catch.hpp>
#include <random>

#include "format/array_tree.hpp"
#include "format/footer.hpp"
#include "format/reader.hpp"
#include "tests/format/fixtures.hpp"
#include "tests/format/seed_files.hpp"

using namespace oc;
using namespace oc::test;

namespace {

void collect_flats(const format::LayoutNode& l, std::vector<const format::LayoutNode*>& out) {
  if (l.encoding == "vortex.flat") out.push_back(&l);
  // Zoned: data only (not the zones table); dict: values only (the codes have another dtype).
  if (l.encoding == "vortex.zoned" || l.encoding == "vortex.stats" || l.encoding == "vortex.dict") {
    collect_flats(*l.children[0], out);
    return;
  }
  for (const auto& c : l.children) collect_flats(*c, out);
}

}  // namespace

TEST_CASE("slice decodes equal slices of full decodes for every column of a real file",
          "[format][slice]") {
  auto f = *format::VortexFile::open_path(seed_path("mixed.vortex"));
  const auto& root = *f->footer().layout;
  const auto& t = *f->dtype();
  std::mt19937_64 rng(7);
  int windows = 0;
  for (size_t field = 0; field < t.children.size(); ++field) {
    std::vector<const format::LayoutNode*> flats;
    collect_flats(*root.children[field], flats);
    REQUIRE(!flats.empty());
    for (const auto* flat : flats) {
      const auto seg = f->footer().segments[flat->segments[0]];
      auto bytes = f->source().read(std::vector<format::ByteRange>{seg.range()});
      REQUIRE(bytes.ok());
      auto tree = format::parse_array_tree((*bytes)[0], f->footer().array_specs);
      REQUIRE(tree.ok());
      const uint64_t n = flat->row_count;
      auto full = decode(*tree, t.children[field], n);
      REQUIRE(full.ok());
      std::vector<format::RowWindow> ws{{0, 0},       {0, 1}, {n - 1, n},
                                        {1023, 1025}, {0, n}, {1000, 2100}};
      for (int k = 0; k < 8; ++k) {
        uint64_t a = rng() % n, b = rng() % n;
        ws.push_back({std::min(a, b), std::max(a, b) + 1});
      }
      for (const auto& w : ws) {
        if (w.end > n || w.begin > w.end) continue;  // the fixed windows assume long chunks
        INFO(t.names[field] << " window [" << w.begin << ", " << w.end << ") encoding "
                            << tree->encoding);
        format::DecodeContext ctx;
        auto part = ctx.decode_slice(*tree, t.children[field], n, w);
        REQUIRE(part.ok());
        REQUIRE((*part)->length == w.size());
        CHECK(rows_of(**part) == rows_of(*format::slice(*full, w.begin, w.size())));
        ++windows;
      }
    }
  }
  CHECK(windows >= 7 * 10);
}

TEST_CASE("a window outside the array is refused", "[format][slice]") {
  format::DecodeContext ctx;
  auto r = ctx.decode_slice(primitive_node<int32_t>({1, 2, 3}),
                            DType::make_primitive(PType::i32, false), 3, {2, 4});
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code() == Errc::invalid);
}

TEST_CASE("row-range scans equal the same rows of a full scan", "[format][slice][reader]") {
  for (const char* name : {"mixed.vortex", "compact_strings.vortex", "compact_numbers.vortex"}) {
    auto f = *format::VortexFile::open_path(seed_path(name));
    auto all_scan = f->scan({});
    REQUIRE(all_scan.ok());
    std::vector<ColumnPtr> batches;
    while (true) {
      auto b = (*all_scan)->next();
      REQUIRE(b.ok());
      if (!*b) break;
      batches.push_back(**b);
    }
    auto full = *format::concat(batches);
    const uint64_t n = f->row_count();
    for (auto [b, e] : std::vector<std::pair<uint64_t, uint64_t>>{
             {0, 1}, {17, n / 3}, {n - 5, n}, {n / 2, n / 2 + 100}}) {
      format::ScanOptions o;
      o.row_range = std::make_pair(b, e);
      auto s = f->scan(o);
      REQUIRE(s.ok());
      std::vector<ColumnPtr> parts;
      while (true) {
        auto x = (*s)->next();
        REQUIRE(x.ok());
        if (!*x) break;
        parts.push_back(**x);
      }
      auto got = *format::concat(parts);
      REQUIRE(got->length == e - b);
      for (size_t field = 0; field < got->children.size(); ++field) {
        INFO(name << " field " << field << " rows [" << b << ", " << e << ")");
        CHECK(rows_of(*slice(got->children[field], got->offset, got->length)) ==
              rows_of(*slice(full->children[field], full->offset + b, e - b)));
      }
    }
  }
}
