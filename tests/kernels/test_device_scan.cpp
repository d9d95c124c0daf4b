// SPDX-License-Identifier: Apache-2.0
// Scans into device memory, checked on the CPU: the host reference of client/device_scan.hpp
// takes every decision the CUDA path takes (fused plan or CPU decode, window and kept rows,
// placement of the filter's columns) and runs the kernels' own host executors, so its batches
// must equal a plain scan's, row for row, over real files and filters.
#include <catch2/catch.hpp>
#include <filesystem>
#include <optional>
#include <sstream>
#include <utility>

#include "client/row_format.hpp"
#include "format/reader.hpp"
#include "format/scan_request.hpp"
#include "kernels/device.hpp"
#include "kernels/device_scan.hpp"
#include "kernels/device_stream.hpp"
#include "tests/format/seed_files.hpp"

namespace oc::kernels {
namespace {

// The device scan (its host reference) of what @p opts asks for, as every layer requests it.
format::ScanRequest device_request(const format::ScanOptions& opts) {
  format::ScanRequest r;
  r.columns = opts.columns;
  r.filter = opts.filter;
  r.batch_rows = opts.batch_rows;
  if (opts.row_range) r.selection = format::RowRange{opts.row_range->first, opts.row_range->second};
  r.strings = format::StringLayout::offsets;
  r.device = format::kHostReferenceDevice;
  return r;
}

// Every batch of @p scan as JSON lines; counts the batches in @p batches.
std::string rows_of(format::Scan& scan, size_t& batches) {
  std::ostringstream os;
  batches = 0;
  while (true) {
    auto b = scan.next();
    REQUIRE(b.ok());
    if (!*b) break;
    ++batches;
    for (const auto& child : (**b)->children) CHECK(child->device == -1);  // the host reference
    client::write_rows(os, ***b, client::RowFormat::jsonl, false);
  }
  return os.str();
}

// A plain scan (strings as offsets, as the device delivers them) and the device scan's host
// reference over @p path with @p opts: the same rows; @return the reference decoder's stats.
DeviceScanStats check_same_rows(const std::string& path, format::ScanOptions opts) {
  INFO(path << " filter '" << opts.filter << "' batch_rows " << opts.batch_rows);
  auto file = format::VortexFile::open_path(path);
  REQUIRE(file.ok());
  opts.strings = format::StringLayout::offsets;
  auto plain = (*file)->scan(opts);
  REQUIRE(plain.ok());
  size_t plain_batches = 0, device_batches = 0;
  const std::string want = rows_of(**plain, plain_batches);
  auto decoder = DeviceChunkDecoder::create(0, DeviceDecodes::host_reference);
  REQUIRE(decoder.ok());
  auto scan = format::plan(*file, device_request(opts), {.device_decoder = *decoder});
  REQUIRE(scan.ok());
  const std::string got = rows_of(*scan->scan, device_batches);
  CHECK(device_batches == plain_batches);
  CHECK(got == want);
  return (*decoder)->stats();
}

}  // namespace

TEST_CASE(
    "a device scan's host reference equals the plain scan on every seed file, with and without "
    "filters",
    "[device-scan]") {
  uint64_t fused = 0, cpu = 0, placed = 0, launches = 0;
  for (const char* name : {"tiny.vortex", "mixed.vortex", "zoned.vortex", "compact_numbers.vortex",
                           "compact_strings.vortex"}) {
    for (uint64_t batch_rows : {uint64_t{0}, uint64_t{777}}) {
      format::ScanOptions opts;
      opts.batch_rows = batch_rows;
      const auto s = check_same_rows(test::seed_path(name), opts);
      fused += s.fused_chunks;
      cpu += s.cpu_chunks;
      placed += s.placed_columns;
      launches += s.launches;
    }
  }
  // A split's fused chunks share one launch: fewer launches than chunks, at least one.
  CHECK(launches > 0);
  CHECK(launches < fused);
  CHECK(fused > 0);  // the seeds hold chains the fused plan covers...
  CHECK(cpu > 0);    // ...and arrays it does not (strings, bools)
  CHECK(placed > 0);
}

TEST_CASE(
    "a device scan gathers only the rows a filter keeps, from fused chunks and placed columns "
    "alike",
    "[device-scan]") {
  // zoned.vortex: id (i64) and name (utf8) in zones; filters on one, both or neither projected.
  const std::string path = test::seed_path("zoned.vortex");
  auto file = format::VortexFile::open_path(path);
  REQUIRE(file.ok());
  const auto& names = (*file)->dtype()->names;
  REQUIRE(!names.empty());
  const std::string first = names[0];
  for (const std::string& filter :
       std::vector<std::string>{first + " < 37", first + " < 0", first + " >= 0",
                                first + " > 100 AND " + first + " < 900"}) {
    format::ScanOptions all;
    all.filter = filter;
    check_same_rows(path, all);
    format::ScanOptions others;  // the filter's column is not projected: rest columns only
    others.filter = filter;
    for (size_t i = 1; i < names.size(); ++i) others.columns.push_back(names[i]);
    if (!others.columns.empty()) check_same_rows(path, others);
    format::ScanOptions window = all;
    window.row_range = std::pair<uint64_t, uint64_t>{3, (*file)->row_count() - 5};
    window.batch_rows = 100;
    check_same_rows(path, window);
  }
}

TEST_CASE("a device scan over units reads their rows in the units' order and resumes at a position",
          "[device-scan]") {
  // The units of a shard, shuffled: out of row order, one split across a chunk boundary (the
  // unit scan's per-unit scans share one decoder), and a resume inside the second unit.
  for (const char* name : {"mixed.vortex", "zoned.vortex", "compact_numbers.vortex"}) {
    INFO(name);
    auto file = format::VortexFile::open_path(test::seed_path(name));
    REQUIRE(file.ok());
    const uint64_t n = (*file)->row_count();
    REQUIRE(n >= 8);
    std::vector<format::Unit> units{{0, n / 2, n}, {0, 1, n / 3}, {0, 0, 1}, {0, n / 3, n / 2}};
    for (const format::UnitPosition start : {format::UnitPosition{}, format::UnitPosition{1, 2}}) {
      format::ScanOptions opts;
      opts.strings = format::StringLayout::offsets;
      opts.batch_rows = 97;
      auto plain = format::scan_units(*file, opts, units, start);
      REQUIRE(plain.ok());
      auto decoder = DeviceChunkDecoder::create(0, DeviceDecodes::host_reference);
      REQUIRE(decoder.ok());
      format::ScanRequest request = device_request(opts);
      format::RangeSelection ranges;
      for (const auto& u : units) ranges.ranges.emplace_back(u.begin, u.end);
      request.selection = ranges;
      request.start = start;
      auto scan = format::plan(*file, request, {.device_decoder = *decoder});
      REQUIRE(scan.ok());
      size_t plain_batches = 0, device_batches = 0;
      const std::string want = rows_of(**plain, plain_batches);
      CHECK(rows_of(*scan->scan, device_batches) == want);
      CHECK(device_batches == plain_batches);
      CHECK(format::position_after(*scan->scan).unit == units.size());
      CHECK((*decoder)->stats().fused_chunks + (*decoder)->stats().cpu_chunks > 0);
    }
  }
}

TEST_CASE("a device scan onto a GPU that is not there says why", "[device-scan]") {
  // Here (no driver, no device, or no CUDA in the build): device 0 is missing, and the error
  // carries the runtime's reason. On a GPU machine: the device past the last one is missing.
  const kernels::DeviceInfo info = kernels::probe_devices();
  auto d = DeviceChunkDecoder::create(info.count, DeviceDecodes::cuda);
  REQUIRE_FALSE(d.ok());
  CHECK(d.error().code() == Errc::cuda);
  CHECK_THAT(d.error().message(), Catch::Contains("cuda:" + std::to_string(info.count)));
  if (info.count == 0) CHECK_THAT(d.error().message(), Catch::Contains(info.why_none));
}

TEST_CASE("interop corpus: a device scan's host reference equals the plain scan on every file",
          "[.corpus][device-scan]") {
  const char* env = std::getenv("ONECOPY_CORPUS_DIR");
  const std::filesystem::path dir =
      env ? std::filesystem::path(env) : std::filesystem::path(OC_SOURCE_DIR) / "tests/data/corpus";
  REQUIRE(std::filesystem::exists(dir / "corpus.json"));
  uint64_t files = 0, fused = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() != ".vortex") continue;
    if (e.path().filename().string().rfind("multi_million", 0) == 0)
      continue;  // [full-corpus] covers it
    format::ScanOptions opts;
    fused += check_same_rows(e.path().string(), opts).fused_chunks;
    ++files;
  }
  CHECK(files > 10);
  CHECK(fused > 0);
}

namespace {

// The host reference's scan of mixed.vortex in batches of @p batch_rows, as a device stream
// tagged @p type / @p id; @p consumer as export_device_stream takes it.
ArrowDeviceArrayStream reference_stream(uint64_t batch_rows, ArrowDeviceType type, int64_t id,
                                        std::optional<uintptr_t> consumer, uint64_t& file_rows) {
  auto file = format::VortexFile::open_path(test::seed_path("mixed.vortex"));
  REQUIRE(file.ok());
  file_rows = (*file)->row_count();
  auto decoder = DeviceChunkDecoder::create(0, DeviceDecodes::host_reference);
  REQUIRE(decoder.ok());
  format::ScanOptions opts;
  opts.batch_rows = batch_rows;
  auto scan = format::plan(*file, device_request(opts), {.device_decoder = *decoder});
  REQUIRE(scan.ok());
  ArrowDeviceArrayStream stream{};
  export_device_stream(std::move(scan->scan), type, id, &stream, consumer);
  return stream;
}

// Reads @p stream to its end, checking each batch's tags and releasing it.
// @return the rows and batches read.
std::pair<uint64_t, uint64_t> drain(ArrowDeviceArrayStream& stream, ArrowDeviceType type,
                                    int64_t id) {
  uint64_t rows = 0, batches = 0;
  while (true) {
    ArrowDeviceArray a{};
    REQUIRE(stream.get_next(&stream, &a) == 0);
    if (a.array.release == nullptr) break;
    CHECK(a.device_type == type);
    CHECK(a.device_id == id);
    CHECK(a.sync_event == nullptr);
    rows += static_cast<uint64_t>(a.array.length);
    ++batches;
    a.array.release(&a.array);
    CHECK(a.array.release == nullptr);
  }
  return {rows, batches};
}

}  // namespace

TEST_CASE("a device scan leaves as an Arrow C Device stream, each batch tagged with its device",
          "[device-scan]") {
  uint64_t file_rows = 0;
  ArrowDeviceArrayStream stream =
      reference_stream(100, ARROW_DEVICE_CPU, -1, std::nullopt, file_rows);
  CHECK(stream.device_type == ARROW_DEVICE_CPU);
  ArrowSchema schema{};
  REQUIRE(stream.get_schema(&stream, &schema) == 0);
  CHECK(std::string(schema.format) == "+s");
  CHECK(schema.n_children > 0);
  schema.release(&schema);
  const auto [rows, batches] = drain(stream, ARROW_DEVICE_CPU, -1);
  CHECK(rows == file_rows);
  CHECK(batches == (rows + 99) / 100);
  stream.release(&stream);
  CHECK(stream.release == nullptr);
}

TEST_CASE(
    "a CUDA batch's release goes through the consumer's wait, then frees what the producer gave",
    "[device-scan]") {
  // Host-reference batches tagged as CUDA ones: the wrapped release runs the wait (which fails
  // here, without a device, and is then skipped) and the producer's release after it; ASan
  // checks that nothing leaks or is freed twice.
  uint64_t file_rows = 0;
  ArrowDeviceArrayStream stream =
      reference_stream(300, ARROW_DEVICE_CUDA, 0, uintptr_t{0}, file_rows);
  CHECK(drain(stream, ARROW_DEVICE_CUDA, 0).first == file_rows);
  stream.release(&stream);
}

}  // namespace oc::kernels
