// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>

#include "format/reader.hpp"
#include "tests/format/fixtures.hpp"
#include "tests/format/seed_files.hpp"

using namespace oc;
using namespace oc::test;

namespace {
uint64_t scan_rows(format::Scan& scan, uint64_t* batches = nullptr, uint64_t* max_batch = nullptr) {
  uint64_t rows = 0;
  while (true) {
    auto b = scan.next();
    REQUIRE(b.ok());
    if (!*b) return rows;
    rows += (**b)->length;
    if (batches) ++*batches;
    if (max_batch) *max_batch = std::max(*max_batch, (**b)->length);
  }
}
}  // namespace

TEST_CASE("open reads the footer in one tail read and reports shape", "[format][reader]") {
  auto f = format::VortexFile::open_path(seed_path("mixed.vortex"));
  REQUIRE(f.ok());
  CHECK((*f)->row_count() == 3000);
  CHECK((*f)->footer().reads_to_open == 1);
  CHECK((*f)->source().stats().reads == 1);
  const auto& t = *(*f)->dtype();
  REQUIRE(t.kind == format::TypeKind::struct_);
  CHECK(t.names == std::vector<std::string>{"id", "small", "price", "city", "flag", "tags", "ts"});
}

TEST_CASE("scan yields every row, projects and limits rows", "[format][reader]") {
  auto f = *format::VortexFile::open_path(seed_path("mixed.vortex"));
  auto all = f->scan({});
  REQUIRE(all.ok());
  CHECK(scan_rows(**all) == 3000);

  format::ScanOptions o;
  o.columns = {"price", "id"};
  o.row_range = std::make_pair(uint64_t{100}, uint64_t{1100});
  o.batch_rows = 64;
  auto s = f->scan(o);
  REQUIRE(s.ok());
  CHECK((*s)->dtype()->names == std::vector<std::string>{"price", "id"});
  auto first = (*s)->next();
  REQUIRE(first.ok());
  REQUIRE(*first);
  const auto& batch = ***first;
  CHECK(values_of<int64_t>(*slice(batch.children[1], 0, 3)) == std::vector<int64_t>{100, 101, 102});
  uint64_t batches = 1, max_batch = batch.length;
  CHECK(scan_rows(**s, &batches, &max_batch) + batch.length == 1000);
  CHECK(max_batch <= 64);
  CHECK(batches >= 1000 / 64);
}

TEST_CASE("scan rejects unknown columns and bad row ranges", "[format][reader]") {
  auto f = *format::VortexFile::open_path(seed_path("mixed.vortex"));
  format::ScanOptions o;
  o.columns = {"nope"};
  CHECK(f->scan(o).error().code() == Errc::not_found);
  o.columns = {};
  o.row_range = std::make_pair(uint64_t{10}, uint64_t{3001});
  CHECK(f->scan(o).error().code() == Errc::invalid);
  CHECK(format::VortexFile::open_path("/nonexistent/x.vortex").error().code() == Errc::not_found);
}

TEST_CASE("memory and file sources agree", "[format][reader]") {
  auto bytes = read_seed("tiny.vortex");
  auto mem = format::VortexFile::open(format::memory_source(Buffer::copy_of(bytes)));
  REQUIRE(mem.ok());
  auto s = (*mem)->scan({});
  REQUIRE(s.ok());
  auto b = (*s)->next();
  REQUIRE(b.ok());
  CHECK(values_of<int8_t>(*(**b)->children[0]) == std::vector<int8_t>{1, 2, 3});
}

TEST_CASE("zone maps decode with per-zone min, max and null count", "[format][reader][zones]") {
  auto f = *format::VortexFile::open_path(seed_path("mixed.vortex"));
  format::SegmentCache cache(f->source_ptr(), f->footer());
  auto reader = f->open_reader(cache);
  REQUIRE(reader.ok());
  std::vector<format::ZoneMapRef> zoned;
  (*reader)->collect_zone_readers(0, zoned);
  REQUIRE(zoned.size() == 7);  // one per column
  CHECK(zoned[0].first_row == 0);
  auto id_zones = zoned[0].reader->zones();
  REQUIRE(id_zones.ok());
  CHECK(id_zones->zone_len == 8192);
  const auto& table = *id_zones->table;
  REQUIRE(table.length == 1);  // 3000 rows fit one zone
  const auto& names = table.dtype->names;
  auto field = [&](const std::string& n) {
    auto it = std::find(names.begin(), names.end(), n);
    REQUIRE(it != names.end());
    return table.children[static_cast<size_t>(it - names.begin())];
  };
  CHECK(field("vortex.min")->values<int64_t>()[0] == 0);
  CHECK(field("vortex.max")->values<int64_t>()[0] == 2999);
  CHECK(field("vortex.null_count")->values<uint64_t>()[0] == 0);
  for (const auto& z : zoned) {  // strings use bounded min/max
    auto zones = z.reader->zones();
    INFO((zones.ok() ? std::string("ok") : zones.error().to_string()));
    CHECK(zones.ok());
  }
}
