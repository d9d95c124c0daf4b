// SPDX-License-Identifier: Apache-2.0
// Scan messages become scans (daemon/scan_wire.hpp from_fbs, then format::plan): unsharded ones
// as before, sharded ones as the shard's units from a start position, so that a request rebuilt
// from a Batch's position resumes without a gap. The messages are built as clients before the
// `selection` field build them; a request that goes through to_fbs comes back unchanged.
#include <algorithm>
#include <catch2/catch.hpp>
#include <optional>
#include <string>
#include <vector>

#include "daemon/scan_wire.hpp"
#include "format/string_views.hpp"
#include "tests/format/seed_files.hpp"

namespace oc::daemon {
namespace {

std::shared_ptr<const format::VortexFile> zoned() {
  auto f = format::VortexFile::open_path(test::seed_path("zoned.vortex"));
  REQUIRE(f.ok());
  return *f;
}

struct Request {
  std::string filter;
  uint64_t batch_rows = 1000;
  std::optional<std::pair<uint64_t, uint64_t>> row_range;
  std::optional<format::ShardSpec> shard;
  format::UnitPosition start;
  uint64_t unit_rows = 0;
};

// A Scan message as a client would send it; the builder owns the bytes.
const fbs::Scan& build(flatbuffers::FlatBufferBuilder& fbb, const Request& r) {
  const format::ShardSpec s = r.shard.value_or(format::ShardSpec{});
  auto cols = fbb.CreateVector(std::vector{fbb.CreateString("id")});
  auto scan = fbs::CreateScan(fbb, 1, 1, cols, fbb.CreateString(r.filter), r.batch_rows,
                              r.row_range ? r.row_range->first : 0,
                              r.row_range ? r.row_range->second : 0, r.row_range.has_value(),
                              r.shard.has_value(), s.rank, s.world_size, s.worker, s.num_workers,
                              s.shuffle, s.seed, s.epoch, r.start.unit, r.start.rows, r.unit_rows);
  fbb.Finish(fbs::CreateMessage(fbb, fbs::Body::Scan, scan.Union()));
  return *fbs::GetMessage(fbb.GetBufferPointer())->body_as_Scan();
}

Result<format::PlannedScan> plan(const Request& r, uint64_t default_unit_rows = 4096) {
  flatbuffers::FlatBufferBuilder fbb;
  auto request = from_fbs(build(fbb, r));
  if (!request.ok()) return std::move(request.error());
  auto p = format::plan(zoned(), *request, {.default_unit_rows = default_unit_rows});
  if (!p.ok()) UNSCOPED_INFO(p.error().to_string());
  return p;
}

// The ids of up to @p max_batches batches of @p scan; @p after gets the position after them.
std::vector<int64_t> ids(format::Scan& scan, size_t max_batches = SIZE_MAX,
                         format::UnitPosition* after = nullptr) {
  std::vector<int64_t> out;
  for (size_t n = 0; n < max_batches; ++n) {
    auto b = scan.next();
    REQUIRE(b.ok());
    if (!*b) break;
    const format::Column& id = *(**b)->children[0];
    const auto* v = reinterpret_cast<const int64_t*>(id.buffers[0].data()) + id.offset;
    out.insert(out.end(), v, v + id.length);
  }
  if (after) *after = format::position_after(scan);
  return out;
}

}  // namespace

TEST_CASE("an unsharded request scans its row range and has no position", "[daemon][scan]") {
  Request r;
  r.filter = "id >= 150";
  r.row_range = std::pair<uint64_t, uint64_t>{100, 200};
  auto p = plan(r);
  REQUIRE(p.ok());
  CHECK(p->units == 0);
  format::UnitPosition after{7, 7};
  const auto got = ids(*p->scan, SIZE_MAX, &after);
  REQUIRE(got.size() == 50);
  CHECK(got.front() == 150);
  CHECK(got.back() == 199);
  CHECK(after.unit == 0);
  CHECK(after.rows == 0);
}

TEST_CASE("sharded requests partition the filtered rows", "[daemon][scan]") {
  const std::string filter = "score > 0.3 AND id >= 1000";
  Request plain;
  plain.filter = filter;
  auto whole = plan(plain);
  REQUIRE(whole.ok());
  const auto want = ids(*whole->scan);
  REQUIRE(want.size() > 20000);
  std::vector<int64_t> all;
  uint64_t units = 0;
  for (uint32_t rank = 0; rank < 3; ++rank) {
    Request r;
    r.filter = filter;
    r.shard = format::ShardSpec{rank, 3, 0, 1, true, 5, 2};
    r.unit_rows = 5000;
    auto p = plan(r);
    REQUIRE(p.ok());
    units += p->units;
    const auto got = ids(*p->scan);
    all.insert(all.end(), got.begin(), got.end());
  }
  CHECK(units == 10);  // 50000 rows in units of 5000, the request's unit_rows
  CHECK(all != want);  // shuffled units come in another order
  std::sort(all.begin(), all.end());
  CHECK(all == want);
}

TEST_CASE("a request from a reported position resumes exactly", "[daemon][scan]") {
  Request r;
  r.filter = "score < 0.8";
  r.batch_rows = 700;
  r.shard = format::ShardSpec{1, 2, 0, 1, true, 11, 0};
  auto whole = plan(r);
  REQUIRE(whole.ok());
  CHECK(whole->units == 6);  // 13 units of at most 4096 rows; rank 1 of 2 gets every other one
  const auto want = ids(*whole->scan);
  for (size_t stop : {1, 5, 6, 17}) {
    auto first = plan(r);
    REQUIRE(first.ok());
    format::UnitPosition at;
    auto got = ids(*first->scan, stop, &at);
    Request again = r;
    again.start = at;
    auto rest = plan(again);
    REQUIRE(rest.ok());
    const auto tail = ids(*rest->scan);
    got.insert(got.end(), tail.begin(), tail.end());
    INFO("stopped after " << stop << " batches at unit " << at.unit << " row " << at.rows);
    CHECK(got == want);
  }
}

TEST_CASE("bad sharded requests are invalid", "[daemon][scan]") {
  auto sharded = [](format::ShardSpec spec) {
    Request r;
    r.shard = spec;
    return r;
  };
  Request ranged = sharded({0, 2, 0, 1});
  ranged.row_range = std::pair<uint64_t, uint64_t>{0, 10};
  auto p = plan(ranged);
  REQUIRE(!p.ok());
  CHECK(p.error().code() == Errc::invalid);
  CHECK(p.error().describe() ==
        "invalid: a scan reads every row, a row range, a shard, explicit ranges or the rows of a "
        "take: one of them, not a row range and a shard");
  CHECK(plan(sharded({2, 2, 0, 1})).error().code() == Errc::invalid);
  CHECK(plan(sharded({0, 1, 3, 2})).error().code() == Errc::invalid);
  Request past = sharded({0, 2, 0, 1});
  past.start = {8, 0};  // rank 0 of 2 has 7 of the 13 units
  CHECK(plan(past).error().code() == Errc::invalid);
  Request at_end = sharded({0, 2, 0, 1});
  at_end.start = {7, 0};
  auto empty = plan(at_end);
  REQUIRE(empty.ok());
  CHECK(ids(*empty->scan).empty());
}

namespace {

format::ScanRequest round_trip(const format::ScanRequest& r) {
  flatbuffers::FlatBufferBuilder fbb;
  fbb.Finish(fbs::CreateMessage(fbb, fbs::Body::Scan, to_fbs(fbb, 3, 4, r).Union()));
  flatbuffers::Verifier v(fbb.GetBufferPointer(), fbb.GetSize());
  REQUIRE(fbs::VerifyMessageBuffer(v));
  const auto* scan = fbs::GetMessage(fbb.GetBufferPointer())->body_as_Scan();
  REQUIRE(scan != nullptr);
  CHECK(scan->request() == 3);
  CHECK(scan->file() == 4);
  auto back = from_fbs(*scan);
  REQUIRE(back.ok());
  return *back;
}

}  // namespace

TEST_CASE("a scan request crosses the wire unchanged", "[daemon][scan][wire]") {
  std::vector<format::ScanRequest> requests(8);
  requests[1].columns = {"b", "a"};
  requests[1].filter = "a > 3";
  requests[1].batch_rows = 77;
  requests[1].selection = format::RowRange{5, 9};
  requests[1].strings = format::StringLayout::offsets;
  requests[1].row_numbers = true;
  requests[2].selection = format::RowRange{};  // to the end
  requests[3].selection = format::ShardSelection{{.rank = 1,
                                                  .world_size = 3,
                                                  .worker = 2,
                                                  .num_workers = 4,
                                                  .shuffle = true,
                                                  .seed = 99,
                                                  .epoch = 7},
                                                 123};
  requests[3].start = {4, 5};
  requests[3].device = 0;
  requests[4].selection = format::RangeSelection{{{10, 20}, {0, 5}, {10, 20}}};
  requests[4].start = {1, 2};
  requests[5].selection = format::RangeSelection{};  // no ranges: no rows, not every row
  requests[6].selection = format::TakeRows{{7, 3, 7, UINT64_MAX}};
  requests[6].columns = {"id"};
  requests[6].batch_rows = 2;
  requests[7].selection = format::TakeRows{};  // no rows: a take of none, not every row
  for (const auto& r : requests) {
    INFO("request " << (&r - requests.data()));
    CHECK(round_trip(r) == r);
  }
}

TEST_CASE("an empty range list reads no row, and a start needs units", "[daemon][scan]") {
  format::ScanRequest none;
  none.selection = format::RangeSelection{};
  auto p = format::plan(zoned(), round_trip(none));
  REQUIRE(p.ok());
  CHECK(p->units == 0);
  CHECK(ids(*p->scan).empty());
  format::ScanRequest loose;
  loose.selection = format::RowRange{0, 10};
  loose.start = {1, 0};
  auto bad = format::plan(zoned(), loose);
  REQUIRE(!bad.ok());
  CHECK(bad.error().describe() ==
        "invalid: a start position counts the units of a shard or of explicit ranges; this scan "
        "reads a row range");
  format::ScanRequest reversed;
  reversed.selection = format::RowRange{10, 5};
  CHECK(format::plan(zoned(), reversed).error().describe() ==
        "invalid: row range 10:5 is reversed (end before begin)");
}

TEST_CASE("a take request reads its rows in its order, repeats kept, in batches of batch_rows",
          "[daemon][scan]") {
  const auto file = zoned();
  format::ScanRequest r;
  r.columns = {"id", "name"};
  r.selection = format::TakeRows{{49'999, 3, 3, 0, 12'345, 3}};
  r.batch_rows = 4;
  auto p = format::plan(file, round_trip(r));
  REQUIRE(p.ok());
  CHECK(p->units == 0);
  CHECK(p->scan->dtype()->names == std::vector<std::string>{"id", "name"});
  CHECK(ids(*p->scan) == std::vector<int64_t>{49'999, 3, 3, 0, 12'345, 3});
  const auto stats = p->scan->stats();
  CHECK(stats.batches == 2);  // 4 rows, then 2
  CHECK(stats.rows == 6);
  CHECK(stats.bytes_read > 0);  // what the take fetched, as a scan reports it
  CHECK(format::position_after(*p->scan) == format::UnitPosition{});
  // The same rows as VortexFile::take, strings included.
  auto want = file->take(std::get<format::TakeRows>(r.selection).rows, r.columns,
                         format::StringLayout::views);
  REQUIRE(want.ok());
  r.batch_rows = 0;
  auto one = format::plan(file, r);
  REQUIRE(one.ok());
  auto got = one->scan->next();
  REQUIRE(got.ok());
  REQUIRE(got->has_value());
  const format::Column& names = *(**got)->children[1];
  const format::Column& want_names = *(*want)->children[1];
  REQUIRE(names.length == want_names.length);
  for (uint64_t i = 0; i < names.length; ++i) {
    CHECK(format::string_at(names, i) == format::string_at(want_names, i));
  }
  CHECK(!*one->scan->next());  // batch_rows 0: one batch
}

TEST_CASE("a take of no rows yields one empty batch; a row past the end fails its first batch",
          "[daemon][scan]") {
  format::ScanRequest none;
  none.selection = format::TakeRows{};
  auto p = format::plan(zoned(), round_trip(none));
  REQUIRE(p.ok());
  auto b = p->scan->next();
  REQUIRE(b.ok());
  REQUIRE(b->has_value());
  CHECK((**b)->length == 0);
  CHECK(!*p->scan->next());

  format::ScanRequest past;
  past.selection = format::TakeRows{{5, 50'000}};
  auto q = format::plan(zoned(), past);
  REQUIRE(q.ok());  // planned without a read
  auto e = q->scan->next();
  REQUIRE(!e.ok());
  CHECK(e.error().code() == Errc::invalid);
  CHECK(e.error().describe().find("take index 50000 (position 1) is past the file's 50000 rows") !=
        std::string::npos);

  format::ScanRequest unknown;
  unknown.columns = {"nope"};
  unknown.selection = format::TakeRows{{1}};
  CHECK(format::plan(zoned(), unknown).error().code() == Errc::not_found);
  format::ScanRequest filtered;
  filtered.filter = "id > 3";
  filtered.selection = format::TakeRows{{1}};
  CHECK(format::plan(zoned(), filtered).error().describe() ==
        "invalid: a take reads the rows it names and has no filter (filter the rows first, or "
        "scan with the filter)");
}

TEST_CASE("a Scan naming a selection this daemon does not know is invalid", "[daemon][scan]") {
  flatbuffers::FlatBufferBuilder fbb;
  fbs::ScanBuilder b(fbb);
  b.add_selection(static_cast<fbs::ScanSelection>(200));
  fbb.Finish(fbs::CreateMessage(fbb, fbs::Body::Scan, b.Finish().Union()));
  const auto* scan = fbs::GetMessage(fbb.GetBufferPointer())->body_as_Scan();
  REQUIRE(scan != nullptr);
  auto r = from_fbs(*scan);
  REQUIRE(!r.ok());
  CHECK(r.error().describe() == "invalid: unknown scan selection 200");
}

}  // namespace oc::daemon
