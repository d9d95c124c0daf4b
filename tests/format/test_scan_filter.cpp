// SPDX-License-Identifier: Apache-2.0
// Filtered scans against an oracle that shares none of their machinery: a full scan of every
// row, with the filter evaluated row by row. Pruning, pushdown to dictionaries and the two-phase
// fetch must change how much is read, never what comes out.
#include <algorithm>
#include <catch2/catch.hpp>
#include <functional>
#include <numeric>
#include <random>
#include <sstream>

#include "client/row_format.hpp"
#include "format/expr_eval.hpp"
#include "format/expr_parser.hpp"
#include "format/reader.hpp"
#include "format/scan_request.hpp"
#include "tests/format/seed_files.hpp"

namespace oc::format {
namespace {

std::shared_ptr<VortexFile> open_seed(const std::string& name) {
  auto f = VortexFile::open_path(test::seed_path(name));
  REQUIRE(f.ok());
  return *f;
}

struct Scanned {
  std::string rows;  // JSON lines
  ScanStats stats;
  std::vector<std::string> names;
};

Scanned run(const VortexFile& f, const ScanOptions& opts) {
  auto scan = f.scan(opts);
  INFO(opts.filter);
  REQUIRE(scan.ok());
  Scanned out;
  out.names = (*scan)->dtype()->names;
  std::ostringstream os;
  while (true) {
    auto b = (*scan)->next();
    REQUIRE(b.ok());
    if (!*b) break;
    client::write_rows(os, ***b, client::RowFormat::jsonl, false);
  }
  out.rows = os.str();
  out.stats = (*scan)->stats();
  return out;
}

// Every row, then the filter evaluated on whole batches and the projection applied.
std::string oracle(const VortexFile& f, const std::string& sql,
                   const std::vector<std::string>& columns) {
  auto parsed = parse_expr(sql);
  REQUIRE(parsed.ok());
  auto bound = bind(**parsed, *f.dtype());
  REQUIRE(bound.ok());
  auto scan = f.scan({});
  REQUIRE(scan.ok());
  const auto& names = f.dtype()->names;
  std::ostringstream os;
  while (true) {
    auto b = (*scan)->next();
    REQUIRE(b.ok());
    if (!*b) break;
    const ColumnPtr& batch = **b;
    auto mask = evaluate(*bound, *batch);
    REQUIRE(mask.ok());
    Column out;
    std::vector<std::string> keep = columns.empty() ? names : columns;
    std::vector<DTypePtr> types;
    for (const auto& c : keep) {
      const size_t i =
          static_cast<size_t>(std::find(names.begin(), names.end(), c) - names.begin());
      auto rows = filter_rows(batch->children[i], *mask);
      REQUIRE(rows.ok());
      types.push_back(batch->dtype->children[i]);
      out.children.push_back(*rows);
    }
    out.dtype = DType::make_struct(keep, types, false);
    out.length = mask->count;
    client::write_rows(os, out, client::RowFormat::jsonl, false);
  }
  return os.str();
}

std::string date_literal(int64_t days) { return "DATE '" + date_to_string(days) + "'"; }

// Random predicates over zoned.vortex: values near and across zone edges, outside the data,
// on NaN, null, truncated-string and dictionary columns.
class FilterGen {
 public:
  explicit FilterGen(uint32_t seed) : rng_(seed) {}

  std::string predicate(int depth = 0) {
    const int pick = pick_int(0, depth >= 2 ? 5 : 8);
    if (pick == 6) return "(" + predicate(depth + 1) + " AND " + predicate(depth + 1) + ")";
    if (pick == 7) return "(" + predicate(depth + 1) + " OR " + predicate(depth + 1) + ")";
    if (pick == 8) return "NOT (" + predicate(depth + 1) + ")";
    return leaf();
  }

 private:
  int pick_int(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }

  std::string value(const std::string& col) {
    if (col == "id") return std::to_string(pick_int(-10, 50010));
    if (col == "grp") return std::to_string(pick_int(-1, 51));
    if (col == "score") {
      const int v = pick_int(-10, 50010);
      return pick_int(0, 1) ? fmt::format("{}.0", v / 10) : fmt::format("{}.05", v / 10);
    }
    if (col == "name")
      return "'" + std::string(70, 'k') + fmt::format("{:04}", pick_int(-1, 51)) + "'";
    if (col == "day") return date_literal(pick_int(-2, 101));
    return pick_int(0, 1) ? "TRUE" : "FALSE";
  }

  std::string leaf() {
    static const char* kCols[] = {"id", "grp", "score", "name", "day", "flag"};
    static const char* kOps[] = {"=", "!=", "<", "<=", ">", ">="};
    const std::string col = kCols[pick_int(0, 5)];
    switch (pick_int(0, 9)) {
      case 0:
        return col + " IS NULL";
      case 1:
        return col + " IS NOT NULL";
      case 2:
        if (col == "flag") break;
        return col + " BETWEEN " + value(col) + " AND " + value(col);
      case 3:
        return col + " IN (" + value(col) + ", " + value(col) + ", " + value(col) + ")";
      case 4:
        if (col != "name") break;
        return "name LIKE '" + std::string(static_cast<size_t>(pick_int(60, 72)), 'k') +
               std::to_string(pick_int(0, 4)) + "%'";
      case 5:
        if (col != "flag") break;
        return "flag";
      default:
        break;
    }
    return col + " " + kOps[pick_int(0, 5)] + " " + value(col);
  }

  std::mt19937 rng_;
};

TEST_CASE("filtered scans equal row-by-row evaluation for random filters",
          "[format][scan][filter]") {
  auto f = open_seed("zoned.vortex");
  const std::vector<std::vector<std::string>> projections = {
      {}, {"id"}, {"name", "score"}, {"day", "flag", "grp"}};
  for (uint32_t seed = 0; seed < 150; ++seed) {
    FilterGen gen(seed);
    ScanOptions opts;
    opts.filter = gen.predicate();
    opts.columns = projections[seed % projections.size()];
    if (seed % 5 == 0) opts.batch_rows = 3000;
    INFO("seed " << seed << ": " << opts.filter);
    const Scanned got = run(*f, opts);
    CHECK(got.rows == oracle(*f, opts.filter, opts.columns));
    CHECK(got.stats.rows_pruned <= got.stats.rows_scanned);
    CHECK(got.stats.zones_pruned <= got.stats.zones_total);
  }
}

TEST_CASE("zone maps prune sorted columns and the rest is never fetched",
          "[format][scan][filter]") {
  auto f = open_seed("zoned.vortex");
  ScanOptions opts;
  opts.columns = {"score"};
  opts.filter = "id < 100";
  const Scanned got = run(*f, opts);
  CHECK(got.rows == oracle(*f, opts.filter, opts.columns));
  CHECK(got.names == std::vector<std::string>{"score"});  // the filter-only column is dropped
  CHECK(got.stats.zones_total == 7);
  CHECK(got.stats.zones_pruned == 6);
  CHECK(got.stats.rows_pruned == 50000 - 8192);
  CHECK(got.stats.rows == 100);

  // No zone can match both; only the zone tables are read, not the 100 KiB score segment.
  opts.filter = "grp IS NULL AND id < 100";
  const Scanned none = run(*f, opts);
  CHECK(none.rows.empty());
  CHECK_FALSE(none.stats.file_pruned);
  CHECK(none.stats.zones_pruned == 7);
  CHECK(none.stats.bytes_read < 4096);
}

TEST_CASE("truncated string bounds, nulls and NaN prune only what is safe",
          "[format][scan][filter]") {
  auto f = open_seed("zoned.vortex");
  const std::string k70(70, 'k');
  struct Case {
    std::string filter;
    uint64_t zones_pruned;
  };
  // Zone z holds rows [8192 z, 8192 (z + 1)); name and grp change every 1000 rows.
  const Case cases[] = {
      // Every name shares its first 70 bytes, so the 64-byte bounds of all zones are equal:
      // truncation must keep every zone.
      {"name = '" + k70 + "0042'", 0},
      {"name >= '" + k70 + "0049'", 0},
      {"grp IS NULL", 5},  // rows 40000..40999 straddle zones 4 and 5
      {"grp IS NOT NULL", 0},
      {"NOT (id >= 8192)", 6},
      {"score > 4950.0", 6},           // zone 6 starts at 49152 (score 4915.2)
      {"score != 1.0", 0},             // NaN rows make != true everywhere
      {"day = DATE '1970-01-05'", 6},  // day 4: rows 2000..2499
      {"flag", 6},
  };
  for (const auto& c : cases) {
    INFO(c.filter);
    ScanOptions opts;
    opts.filter = c.filter;
    const Scanned got = run(*f, opts);
    CHECK(got.rows == oracle(*f, c.filter, {}));
    CHECK(got.stats.zones_pruned == c.zones_pruned);
  }
}

TEST_CASE("file statistics prune a whole file before any segment is read",
          "[format][scan][filter]") {
  auto f = open_seed("zoned.vortex");
  for (const char* sql :
       {"id < 0", "id > 49999 OR grp > 60", "day < DATE '1969-12-31'", "name < 'a'"}) {
    INFO(sql);
    ScanOptions opts;
    opts.filter = sql;
    const Scanned got = run(*f, opts);
    CHECK(got.rows.empty());
    CHECK(got.stats.file_pruned);
    CHECK(got.stats.segments_read == 0);
  }
}

TEST_CASE("a filter combines with a row range and with batch_rows", "[format][scan][filter]") {
  auto f = open_seed("zoned.vortex");
  ScanOptions opts;
  opts.filter = "id % 2 = 0";
  CHECK(!f->scan(opts).ok());  // no arithmetic in the grammar
  opts.filter = "grp IN (3, 45) OR score < 1.0";
  opts.row_range = std::pair<uint64_t, uint64_t>{2500, 45500};
  opts.batch_rows = 777;
  const Scanned got = run(*f, opts);
  // Rows of grp 3 (3000..3999) and 45 (45000..45499 in range); score < 1 is before the range.
  CHECK(got.stats.rows == 1000 + 500);
  CHECK(got.stats.rows_scanned == 43000);
}

TEST_CASE("bad filters fail with errors that point at the problem", "[format][scan][filter]") {
  auto f = open_seed("mixed.vortex");
  ScanOptions opts;
  opts.filter = "small > 3 AND (price";
  auto bad = f->scan(opts);
  REQUIRE(!bad.ok());
  CHECK(bad.error().code() == Errc::invalid);
  CHECK_THAT(bad.error().to_string(), Catch::Contains("^"));
  opts.filter = "nosuch = 1";
  auto unknown = f->scan(opts);
  REQUIRE(!unknown.ok());
  CHECK(unknown.error().code() == Errc::not_found);
  CHECK_THAT(unknown.error().to_string(), Catch::Contains("nosuch"));
  opts.filter = "city > 3";
  auto mismatch = f->scan(opts);
  REQUIRE(!mismatch.ok());
  CHECK(mismatch.error().code() == Errc::invalid);
}

TEST_CASE("filters on mixed.vortex match row-by-row evaluation", "[format][scan][filter]") {
  auto f = open_seed("mixed.vortex");
  for (const char* sql : {"small > 50", "small IS NULL", "city = 'Lima' AND flag",
                          "price BETWEEN 10.0 AND 20.5", "city LIKE 'P%' OR NOT flag",
                          "ts >= TIMESTAMP '2023-11-14 22:30:00'", "id IN (5, 77, 2999)"}) {
    for (const std::vector<std::string>& cols :
         {std::vector<std::string>{}, std::vector<std::string>{"tags", "id"}}) {
      INFO(sql);
      ScanOptions opts;
      opts.filter = sql;
      opts.columns = cols;
      CHECK(run(*f, opts).rows == oracle(*f, sql, cols));
    }
  }
}

// The JSON lines of @p rows with each line's row number (its last field) taken off, and those
// numbers in @p numbers.
std::string without_row_numbers(const std::string& rows, std::vector<uint64_t>& numbers) {
  const std::string key = std::string(",\"") + kRowNumberColumn + "\":";
  std::istringstream in(rows);
  std::string out, line;
  while (std::getline(in, line)) {
    const size_t at = line.rfind(key);
    if (at == std::string::npos) FAIL("a row without its number: " << line);
    numbers.push_back(std::stoull(line.substr(at + key.size())));
    out += line.substr(0, at) + "}\n";
  }
  return out;
}

std::vector<std::string> lines_of(const std::string& rows) {
  std::vector<std::string> out;
  std::istringstream in(rows);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

TEST_CASE("row numbers name the rows a filter kept", "[format][scan][filter]") {
  auto f = open_seed("zoned.vortex");
  const std::vector<std::vector<std::string>> projections = {{}, {"id"}, {"name", "score"}};
  for (const auto& columns : projections) {
    // Every row with its number: line i is row i (the multi-threaded whole-split path).
    ScanOptions all;
    all.columns = columns;
    all.row_numbers = true;
    const Scanned whole = run(*f, all);
    CHECK(whole.names.back() == kRowNumberColumn);
    const std::vector<std::string> rows = lines_of(whole.rows);
    REQUIRE(rows.size() == 50000);
    std::vector<uint64_t> numbers, every(rows.size());
    ScanOptions plain;
    plain.columns = columns;
    CHECK(without_row_numbers(whole.rows, numbers) == run(*f, plain).rows);
    std::iota(every.begin(), every.end(), uint64_t{0});
    CHECK(numbers == every);

    for (uint32_t seed = 0; seed < 40; ++seed) {
      FilterGen gen(seed);
      ScanOptions opts = all;
      opts.filter = gen.predicate();
      if (seed % 4 == 1) opts.batch_rows = 3000;
      if (seed % 4 == 2) opts.row_range = std::pair<uint64_t, uint64_t>{1234, 45678};
      INFO("seed " << seed << ": " << opts.filter);
      const Scanned got = run(*f, opts);
      std::vector<uint64_t> kept;
      const std::string plain = without_row_numbers(got.rows, kept);
      // The rows delivered are the oracle's, and each is the row its number names.
      ScanOptions same = opts;
      same.row_numbers = false;
      CHECK(plain == run(*f, same).rows);
      if (!opts.row_range) CHECK(plain == oracle(*f, opts.filter, columns));
      const uint64_t lo = opts.row_range ? 1234 : 0, hi = opts.row_range ? 45678 : rows.size();
      CHECK(std::adjacent_find(kept.begin(), kept.end(), std::greater_equal<>()) == kept.end());
      REQUIRE(std::all_of(kept.begin(), kept.end(), [&](uint64_t k) { return k >= lo && k < hi; }));
      std::vector<std::string> named;
      for (uint64_t k : kept) named.push_back(rows[k]);
      CHECK(lines_of(got.rows) == named);
    }
  }
}

TEST_CASE("row numbers through the planner: units, refusals", "[format][scan][filter]") {
  std::shared_ptr<const VortexFile> f = open_seed("zoned.vortex");
  ScanRequest r;
  r.columns = {"id"};
  r.row_numbers = true;
  r.selection = RangeSelection{{{10, 13}, {0, 2}, {49998, 50000}}};
  auto p = plan(f, r);
  REQUIRE(p.ok());
  std::vector<uint64_t> numbers;
  while (true) {
    auto b = p->scan->next();
    REQUIRE(b.ok());
    if (!*b) break;
    REQUIRE((**b)->children.size() == 2);
    const Column& n = *(**b)->children[1];
    numbers.insert(numbers.end(), n.values<uint64_t>(), n.values<uint64_t>() + n.length);
  }
  CHECK(numbers == std::vector<uint64_t>{10, 11, 12, 0, 1, 49998, 49999});

  ScanRequest take = r;
  take.selection = TakeRows{{1, 2}};
  CHECK(plan(f, take).error().describe() ==
        "invalid: a take's rows are the ones it names: it has no row numbers");
  ScanRequest device = r;
  device.device = 0;
  CHECK(plan(f, device).error().describe() ==
        "invalid: row numbers come from a host scan, not from one on device 0");
}

}  // namespace
}  // namespace oc::format
