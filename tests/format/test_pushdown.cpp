// SPDX-License-Identifier: Apache-2.0
// Scans pushed into the storage (format/pushdown.hpp), in-process over memory sources: the
// request's FlatBuffer round trip and hostile requests, the errno contract, and the method's
// body against the same scan written in-process by the same Arrow IPC writer (byte-equal), with
// the stream's own metadata read back for what the request asked (fields, rows), and zstd
// answers read back equal to uncompressed ones. The OSD side
// (libcls_onecopy.so in a real ceph-osd) is tests/interop/test_cls_scan.py.
#include <flatbuffers/flatbuffers.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "config/defaults.hpp"
#include "format/arrow_ipc.hpp"
#include "format/arrow_ipc_read.hpp"
#include "format/fbs/arrow_ipc_generated.h"
#include "format/fbs/pushdown_generated.h"
#include "format/fuzz.hpp"
#include "format/pushdown.hpp"
#include "format/reader.hpp"
#include "tests/format/fixtures.hpp"
#include "tests/format/seed_files.hpp"

using namespace oc;
using namespace oc::test;
using format::PushdownRequest;
namespace afb = oc::arrow_fb;

namespace {

constexpr uint64_t kMiB = 1024 * 1024;

std::span<const uint8_t> span_of(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

std::shared_ptr<format::SegmentSource> source_of(const std::vector<uint8_t>& bytes) {
  return format::memory_source(format::Buffer::copy_of(bytes));
}

// The request's errno, or 0 when it decodes.
int decode_errno(std::span<const uint8_t> bytes, uint64_t cap = kMiB) {
  auto r = format::decode_pushdown_request(bytes, cap);
  return r.ok() ? 0 : format::pushdown_errno(r.error());
}

int scan_errno(const std::vector<uint8_t>& file, const PushdownRequest& req,
               uint64_t cap = 64 * kMiB) {
  auto src = source_of(file);
  auto r = format::run_pushdown_scan(*src, req, cap);
  if (r.ok()) return 0;
  INFO(r.error().to_string());
  return format::pushdown_errno(r.error());
}

// The stream the request should produce, made independently of format/pushdown.cpp: the same
// scan (default splits in flight, so another decode schedule) written by the same writer.
std::string reference_stream(const std::vector<uint8_t>& file, const PushdownRequest& req) {
  auto f = format::VortexFile::open(source_of(file));
  REQUIRE(f.ok());
  format::ScanOptions o;
  o.columns = req.columns;
  o.filter = req.filter;
  if (req.row_begin != 0 || req.row_end != 0) o.row_range = std::pair{req.row_begin, req.row_end};
  o.strings = req.string_views ? format::StringLayout::views : format::StringLayout::offsets;
  auto scan = (*f)->scan(o);
  REQUIRE(scan.ok());
  auto w = format::ArrowIpcWriter::make((*scan)->dtype(),
                                        {.strings = o.strings, .compression = req.compression});
  REQUIRE(w.ok());
  std::string out = w->schema_message().to_string();
  for (;;) {
    auto b = (*scan)->next();
    REQUIRE(b.ok());
    if (!*b) break;
    if ((**b)->length == 0) continue;
    auto m = w->batch_message(**b);
    REQUIRE(m.ok());
    out += m->to_string();
  }
  return out + format::ArrowIpcWriter::end_of_stream().to_string();
}

// What a stream says about itself: its top-level field names and its batches' row counts.
struct StreamFacts {
  std::vector<std::string> fields;
  std::vector<int64_t> batch_rows;
  bool ended = false;
};

StreamFacts read_facts(const std::string& s) {
  StreamFacts f;
  size_t pos = 0;
  while (pos + 8 <= s.size()) {
    uint32_t marker = 0;
    int32_t len = 0;
    std::memcpy(&marker, s.data() + pos, 4);
    std::memcpy(&len, s.data() + pos + 4, 4);
    REQUIRE(marker == 0xFFFFFFFFu);
    pos += 8;
    if (len == 0) {
      f.ended = true;
      REQUIRE(pos == s.size());
      break;
    }
    REQUIRE(len > 0);
    REQUIRE(pos + static_cast<size_t>(len) <= s.size());
    flatbuffers::Verifier v(reinterpret_cast<const uint8_t*>(s.data() + pos),
                            static_cast<size_t>(len));
    REQUIRE(v.VerifyBuffer<afb::Message>(nullptr));
    const auto* m = flatbuffers::GetRoot<afb::Message>(s.data() + pos);
    if (const auto* schema = m->header_as_Schema()) {
      REQUIRE(f.fields.empty());
      for (const auto* field : *schema->fields()) f.fields.push_back(field->name()->str());
    } else {
      const auto* rb = m->header_as_RecordBatch();
      REQUIRE(rb != nullptr);
      f.batch_rows.push_back(rb->length());
    }
    pos += static_cast<size_t>(len) + static_cast<size_t>(m->body_length());
  }
  return f;
}

int64_t rows_of(const StreamFacts& f) {
  int64_t n = 0;
  for (int64_t r : f.batch_rows) n += r;
  return n;
}

// Runs @p req over @p file and requires the reference stream, byte for byte.
std::string check_scan(const std::vector<uint8_t>& file, const PushdownRequest& req) {
  auto src = source_of(file);
  auto got = format::run_pushdown_scan(*src, req, uint64_t{1} << 40);
  INFO((got.ok() ? std::string("ok") : got.error().to_string()));
  REQUIRE(got.ok());
  CHECK(*got == reference_stream(file, req));
  return *got;
}

PushdownRequest request_for(const std::vector<uint8_t>& file) {
  PushdownRequest r;
  r.file_size = file.size();
  return r;
}

// Builds a ScanRequest table by hand, field by field, to put what the schema does not allow.
template <class F>
std::vector<uint8_t> raw_request(F&& add_fields) {
  flatbuffers::FlatBufferBuilder b;
  add_fields(b);
  const auto* p = b.GetBufferPointer();
  return {p, p + b.GetSize()};
}

}  // namespace

TEST_CASE("pushdown requests round-trip through their FlatBuffer", "[pushdown]") {
  PushdownRequest all;
  all.file_size = 123456789012345;
  all.columns = {"b", "a", "naïve column", std::string(300, 'x')};
  all.filter = "a > 5 AND b = 'x'";
  all.row_begin = 7;
  all.row_end = 1ull << 40;
  all.max_result_bytes = 5 * kMiB;
  all.string_views = true;
  all.compression = format::IpcCompression::zstd;
  for (const PushdownRequest& r : {PushdownRequest{}, all}) {
    const std::string bytes = format::encode_pushdown_request(r);
    auto d = format::decode_pushdown_request(span_of(bytes), kMiB);
    REQUIRE(d.ok());
    CHECK(*d == r);
  }
  // An empty request still carries every field (ForceDefaults): version 1 reads back as 1.
  PushdownRequest none;
  none.version = 1;
  auto d = format::decode_pushdown_request(span_of(format::encode_pushdown_request(none)), kMiB);
  REQUIRE(d.ok());
  CHECK(d->version == 1);
  CHECK(d->columns.empty());
  CHECK(d->filter.empty());
  CHECK(d->compression == format::IpcCompression::none);
  // A request of a build from before `compression` (the table one field shorter) asks for none.
  const auto old = raw_request([](flatbuffers::FlatBufferBuilder& b) {
    using T = oc::fbs::pushdown::ScanRequest;
    const auto t = b.StartTable();
    b.AddElement<uint32_t>(T::VT_VERSION, 1);
    b.AddElement<uint8_t>(T::VT_STRING_VIEWS, 1, 0);
    b.Finish(flatbuffers::Offset<T>(b.EndTable(t)));
  });
  auto o = format::decode_pushdown_request(old, kMiB);
  REQUIRE(o.ok());
  CHECK(o->string_views);
  CHECK(o->compression == format::IpcCompression::none);
}

TEST_CASE("hostile pushdown requests are refused with the errno they earn", "[pushdown]") {
  PushdownRequest good;
  good.file_size = 4096;
  good.columns = {"id", "name"};
  good.filter = "id > 3";
  const std::string bytes = format::encode_pushdown_request(good);

  SECTION("empty and truncated") {
    CHECK(decode_errno({}) == -EINVAL);
    // A prefix that only drops the builder's trailing padding may still verify; then it must
    // read back as the request itself.
    int refused = 0;
    for (size_t n = 1; n < bytes.size(); ++n) {
      INFO("prefix of " << n << " bytes");
      auto d = format::decode_pushdown_request(span_of(bytes).first(n), kMiB);
      if (d.ok()) {
        CHECK(*d == good);
      } else {
        CHECK(format::pushdown_errno(d.error()) == -EINVAL);
        ++refused;
      }
    }
    CHECK(refused >= static_cast<int>(bytes.size()) - 8);
    CHECK(decode_errno(span_of(bytes)) == 0);
  }
  SECTION("over the size cap: E2BIG before any byte is read") {
    CHECK(decode_errno(span_of(bytes), bytes.size()) == 0);
    CHECK(decode_errno(span_of(bytes), bytes.size() - 1) == -E2BIG);
    PushdownRequest huge = good;
    huge.columns.assign(1, std::string(2 * kMiB, 'c'));
    CHECK(decode_errno(span_of(format::encode_pushdown_request(huge))) == -E2BIG);
  }
  SECTION("versions: none is invalid, a newer one unsupported") {
    PushdownRequest r = good;
    r.version = 0;
    CHECK(decode_errno(span_of(format::encode_pushdown_request(r))) == -EINVAL);
    r.version = format::kPushdownVersion + 1;
    CHECK(decode_errno(span_of(format::encode_pushdown_request(r))) == -EPROTO);
  }
  SECTION("row ranges that run backwards") {
    PushdownRequest r = good;
    r.row_begin = 10;
    r.row_end = 5;
    CHECK(decode_errno(span_of(format::encode_pushdown_request(r))) == -EINVAL);
    r.row_end = 0;  // only (0, 0) means every row
    CHECK(decode_errno(span_of(format::encode_pushdown_request(r))) == -EINVAL);
    r.row_end = 10;  // empty, but a range
    CHECK(decode_errno(span_of(format::encode_pushdown_request(r))) == 0);
  }
  SECTION("compressions other than none and zstd") {
    PushdownRequest r = good;
    for (int c : {2, 3, 255}) {
      r.compression = static_cast<format::IpcCompression>(c);
      CHECK(decode_errno(span_of(format::encode_pushdown_request(r))) == -EINVAL);
    }
    r.compression = format::IpcCompression::zstd;
    CHECK(decode_errno(span_of(format::encode_pushdown_request(r))) == 0);
  }
  SECTION("empty and repeated column names") {
    PushdownRequest r = good;
    r.columns = {"id", ""};
    CHECK(decode_errno(span_of(format::encode_pushdown_request(r))) == -EINVAL);
    r.columns = {"id", "name", "id"};
    CHECK(decode_errno(span_of(format::encode_pushdown_request(r))) == -EINVAL);
  }
  SECTION("fields of the wrong type") {
    using T = oc::fbs::pushdown::ScanRequest;
    // columns as a vector of integers: read as string offsets, they point outside the buffer
    const auto ints_as_columns = raw_request([](flatbuffers::FlatBufferBuilder& b) {
      const auto v = b.CreateVector(std::vector<uint32_t>{0xFFFFFF00u, 0x7FFFFFF0u});
      const auto t = b.StartTable();
      b.AddElement<uint32_t>(T::VT_VERSION, 1);
      b.AddOffset(T::VT_COLUMNS, v);
      b.Finish(flatbuffers::Offset<T>(b.EndTable(t)));
    });
    CHECK(decode_errno(ints_as_columns) == -EINVAL);
    // filter as a scalar where an offset belongs: it points past the end
    const auto scalar_as_filter = raw_request([](flatbuffers::FlatBufferBuilder& b) {
      const auto t = b.StartTable();
      b.AddElement<uint32_t>(T::VT_VERSION, 1);
      b.AddElement<uint32_t>(T::VT_FILTER, 0x40000000u);
      b.Finish(flatbuffers::Offset<T>(b.EndTable(t)));
    });
    CHECK(decode_errno(scalar_as_filter) == -EINVAL);
    // a string not terminated within the buffer
    std::string cut = bytes;
    const auto at = cut.rfind("name");
    REQUIRE(at != std::string::npos);
    cut[at + 4] = 'x';  // the terminating NUL
    CHECK(decode_errno(span_of(cut)) == -EINVAL);
  }
  SECTION("garbage never crashes and is never more than invalid or unsupported") {
    std::mt19937_64 rng(20);
    int refused = 0;
    for (int i = 0; i < 2000; ++i) {
      std::vector<uint8_t> junk(rng() % 256);
      for (auto& b : junk) b = static_cast<uint8_t>(rng());
      // flipped bytes of a real request reach deeper than random ones
      std::string flipped = bytes;
      flipped[rng() % flipped.size()] = static_cast<char>(rng());
      for (std::span<const uint8_t> in : {std::span<const uint8_t>(junk), span_of(flipped)}) {
        auto r = format::decode_pushdown_request(in, kMiB);
        if (r.ok()) continue;
        ++refused;
        const int e = format::pushdown_errno(r.error());
        CHECK((e == -EINVAL || e == -EPROTO));
      }
    }
    CHECK(refused >= 2000);  // every random buffer at least
  }
}

TEST_CASE("pushdown errors map to errnos and back", "[pushdown]") {
  auto err = [](Errc c, int sys = 0) { return Error(c, "x", __FILE__, __LINE__, sys); };
  CHECK(format::pushdown_errno(err(Errc::invalid)) == -EINVAL);
  CHECK(format::pushdown_errno(err(Errc::not_found)) == -EINVAL);
  CHECK(format::pushdown_errno(err(Errc::corrupt)) == -EBADMSG);
  CHECK(format::pushdown_errno(err(Errc::unsupported)) == -EPROTO);
  CHECK(format::pushdown_errno(err(Errc::out_of_memory)) == -ENOMEM);
  CHECK(format::pushdown_errno(err(Errc::io, EBADF)) == -EIO);
  CHECK(format::pushdown_errno(err(Errc::timeout)) == -EIO);
  CHECK(format::pushdown_errno(err(Errc::denied)) == -EIO);
  CHECK(format::pushdown_errno(err(Errc::invalid, E2BIG)) == -E2BIG);
  CHECK(format::pushdown_errno(err(Errc::out_of_memory, EFBIG)) == -EFBIG);
  CHECK(format::pushdown_errno(err(Errc::io, ESTALE)) == -ESTALE);
  // Back: every errno of the contract, and the OSD's own.
  for (int e : {EINVAL, E2BIG, EBADMSG, EPROTO, EFBIG, ENOMEM, ESTALE, EIO}) {
    INFO("errno " << e);
    const Errc c = format::errc_from_pushdown_errno(-e);
    CHECK(format::errc_from_pushdown_errno(e) == c);
    CHECK(format::pushdown_errno(err(c, e)) == -e);  // an Error made from it says it again
  }
  CHECK(format::errc_from_pushdown_errno(-EBADMSG) == Errc::corrupt);
  CHECK(format::errc_from_pushdown_errno(-EFBIG) == Errc::out_of_memory);
  CHECK(format::errc_from_pushdown_errno(-EOPNOTSUPP) == Errc::unsupported);
  CHECK(format::errc_from_pushdown_errno(-EPERM) == Errc::denied);
  CHECK(format::errc_from_pushdown_errno(-ENOENT) == Errc::not_found);
  CHECK(format::errc_from_pushdown_errno(-EXDEV) == Errc::io);
}

TEST_CASE("a pushed-down scan is the in-process scan's Arrow IPC stream", "[pushdown]") {
  const auto zoned = read_seed("zoned.vortex");  // id 0..49999, grp, name, score, flag, day
  REQUIRE(!zoned.empty());
  PushdownRequest r = request_for(zoned);

  SECTION("every row of every column, strings as offsets and as views") {
    for (bool views : {false, true}) {
      r.string_views = views;
      const auto f = read_facts(check_scan(zoned, r));
      CHECK(f.fields == std::vector<std::string>{"id", "grp", "name", "score", "flag", "day"});
      CHECK(rows_of(f) == 50000);
      CHECK(f.ended);
    }
  }
  SECTION("a projection in the request's order") {
    r.columns = {"score", "id"};
    const auto f = read_facts(check_scan(zoned, r));
    CHECK(f.fields == r.columns);
    CHECK(rows_of(f) == 50000);
  }
  SECTION("a row range") {
    r.row_begin = 1234;
    r.row_end = 31234;
    r.columns = {"name"};
    CHECK(rows_of(read_facts(check_scan(zoned, r))) == 30000);
  }
  SECTION("a filter on a column outside the projection, with a row range") {
    r.columns = {"name", "flag"};
    r.filter = "id >= 1000 AND id < 1100";
    auto f = read_facts(check_scan(zoned, r));
    CHECK(f.fields == r.columns);
    CHECK(rows_of(f) == 100);
    r.row_begin = 1050;
    r.row_end = 2000;
    CHECK(rows_of(read_facts(check_scan(zoned, r))) == 50);
  }
  SECTION("no surviving row: the schema and the end marker") {
    r.filter = "id < 0";
    const auto f = read_facts(check_scan(zoned, r));
    CHECK(f.fields.size() == 6);
    CHECK(f.batch_rows.empty());
    CHECK(f.ended);
    r.filter.clear();
    r.row_begin = r.row_end = 777;
    CHECK(read_facts(check_scan(zoned, r)).batch_rows.empty());
  }
  SECTION("other seed files: nested, timestamps, compact encodings") {
    for (const char* name :
         {"mixed.vortex", "tiny.vortex", "compact_numbers.vortex", "compact_strings.vortex"}) {
      INFO(name);
      const auto file = read_seed(name);
      REQUIRE(!file.empty());
      PushdownRequest q = request_for(file);
      CHECK(rows_of(read_facts(check_scan(file, q))) > 0);
      q.string_views = true;
      check_scan(file, q);
    }
    const auto mixed = read_seed("mixed.vortex");
    PushdownRequest q = request_for(mixed);
    q.columns = {"tags", "city"};
    q.filter = "flag AND id < 2000";
    const auto f = read_facts(check_scan(mixed, q));
    CHECK(rows_of(f) > 0);
    CHECK(rows_of(f) < 2000);
  }
}

TEST_CASE("a zstd-compressed answer reads back as the uncompressed one", "[pushdown]") {
  for (const char* name : {"zoned.vortex", "mixed.vortex", "compact_strings.vortex"}) {
    const auto file = read_seed(name);
    REQUIRE(!file.empty());
    for (bool views : {false, true}) {
      INFO(name << (views ? " views" : " offsets"));
      PushdownRequest r = request_for(file);
      r.string_views = views;
      const std::string plain = check_scan(file, r);
      r.compression = format::IpcCompression::zstd;
      const std::string zstd = check_scan(file, r);  // the reference writer compresses too
      CHECK(zstd.size() < plain.size());
      CHECK(read_facts(zstd).batch_rows == read_facts(plain).batch_rows);
      // Both read back as the scan's dtype, to equal rows.
      auto f = format::VortexFile::open(source_of(file));
      REQUIRE(f.ok());
      const auto layout = views ? format::StringLayout::views : format::StringLayout::offsets;
      format::ScanOptions so;
      so.strings = layout;
      auto scan = (*f)->scan(so);
      REQUIRE(scan.ok());
      const format::ArrowIpcReadOptions o{.strings = layout};
      auto a = format::read_arrow_ipc_stream(format::Buffer::copy_of(span_of(plain)),
                                             (*scan)->dtype(), o);
      auto b = format::read_arrow_ipc_stream(format::Buffer::copy_of(span_of(zstd)),
                                             (*scan)->dtype(), o);
      REQUIRE(a.ok());
      if (!b.ok()) FAIL(b.error().to_string());
      REQUIRE(a->size() == b->size());
      for (size_t i = 0; i < a->size(); ++i) {
        CHECK(oc::test::rows_of(*(*a)[i]) == oc::test::rows_of(*(*b)[i]));
      }
    }
  }
}

TEST_CASE("pushed-down scans fail with the errno of what went wrong", "[pushdown]") {
  const auto zoned = read_seed("zoned.vortex");
  REQUIRE(zoned.size() > 1000);
  PushdownRequest r = request_for(zoned);

  SECTION("not a Vortex file, or a truncated one: EBADMSG") {
    std::vector<uint8_t> text(5000, 'v');
    PushdownRequest t = request_for(text);
    CHECK(scan_errno(text, t) == -EBADMSG);
    std::vector<uint8_t> empty;
    CHECK(scan_errno(empty, request_for(empty)) == -EBADMSG);
    for (size_t cut : {size_t{1}, size_t{100}, zoned.size() / 2}) {
      std::vector<uint8_t> head(zoned.begin(), zoned.end() - static_cast<ptrdiff_t>(cut));
      INFO("cut " << cut);
      CHECK(scan_errno(head, request_for(head)) == -EBADMSG);
    }
  }
  SECTION("an object of another size than the request's: ESTALE") {
    r.file_size = zoned.size() + 1;
    CHECK(scan_errno(zoned, r) == -ESTALE);
    r.file_size = zoned.size() - 1;
    CHECK(scan_errno(zoned, r) == -ESTALE);
    r.file_size = 0;
    CHECK(scan_errno(zoned, r) == -ESTALE);
  }
  SECTION("what the request asks of the file: EINVAL") {
    r.columns = {"no_such_column"};
    CHECK(scan_errno(zoned, r) == -EINVAL);
    r.columns.clear();
    r.filter = "id >>> 3";
    CHECK(scan_errno(zoned, r) == -EINVAL);
    r.filter = "missing = 1";
    CHECK(scan_errno(zoned, r) == -EINVAL);
    r.filter.clear();
    r.row_begin = 10;
    r.row_end = 50001;
    CHECK(scan_errno(zoned, r) == -EINVAL);
  }
  SECTION("the result cap: EFBIG, the request's own or the caller's, whichever is less") {
    const uint64_t full = check_scan(zoned, r).size();
    CHECK(scan_errno(zoned, r, full) == 0);
    CHECK(scan_errno(zoned, r, full - 1) == -EFBIG);
    r.max_result_bytes = full - 1;
    CHECK(scan_errno(zoned, r, full) == -EFBIG);
    r.max_result_bytes = full;
    CHECK(scan_errno(zoned, r, 64 * kMiB) == 0);
    r.max_result_bytes = 64 * kMiB;  // more than the caller allows: the caller's cap holds
    CHECK(scan_errno(zoned, r, full - 1) == -EFBIG);
    CHECK(scan_errno(zoned, r, 16) == -EFBIG);  // not even the schema fits
  }
}

// The interop corpus (tests/interop/corpus.py), as tests/format/test_take.cpp finds it: hidden
// until it exists, and failing when asked for without it.
TEST_CASE("every interop corpus file pushes down as the in-process scan", "[.corpus][pushdown]") {
  const char* env = std::getenv("ONECOPY_CORPUS_DIR");
  const auto dir =
      env ? std::filesystem::path(env) : std::filesystem::path(OC_SOURCE_DIR) / "tests/data/corpus";
  REQUIRE(std::filesystem::exists(dir / "corpus.json"));
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() == ".vortex") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  REQUIRE(!files.empty());
  for (const auto& path : files) {
    INFO(path.string());
    std::ifstream in(path, std::ios::binary);
    const std::vector<uint8_t> file{std::istreambuf_iterator<char>(in), {}};
    PushdownRequest r = request_for(file);
    for (bool views : {false, true}) {
      r.string_views = views;
      check_scan(file, r);
    }
    // the last field alone, over the middle of the rows
    auto f = format::VortexFile::open(source_of(file));
    REQUIRE(f.ok());
    const uint64_t n = (*f)->row_count();
    if ((*f)->dtype()->names.empty()) continue;
    r.columns = {(*f)->dtype()->names.back()};
    r.row_begin = n / 3;
    r.row_end = n - n / 3;
    CHECK(rows_of(read_facts(check_scan(file, r))) ==
          static_cast<int64_t>(r.row_end - r.row_begin));
  }
}

TEST_CASE("the object class's knobs: defaults and bounds", "[pushdown]") {
  const Defaults d = builtin_defaults();
  CHECK(d.cls_max_request_bytes == kMiB);
  CHECK(d.cls_max_result_bytes == 64 * kMiB);
  CHECK(d.cls_max_decoded_bytes == 512 * kMiB);
  auto env = [](std::string var, std::string value) {
    return defaults_from_env([=](std::string_view name) -> std::optional<std::string> {
      if (name == var) return value;
      return std::nullopt;
    });
  };
  auto r = env("ONECOPY_CLS_MAX_RESULT_BYTES", "2GiB");  // the OSD's out_len is an int
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().to_string().find("ONECOPY_CLS_MAX_RESULT_BYTES") != std::string::npos);
  auto ok = env("ONECOPY_CLS_MAX_DECODED_BYTES", "1GiB");
  REQUIRE(ok.ok());
  CHECK(ok->cls_max_decoded_bytes == 1024 * kMiB);
  CHECK_FALSE(env("ONECOPY_CLS_MAX_REQUEST_BYTES", "1KiB").ok());
  // The answers' zstd level and the client's choice of compression.
  CHECK(d.ipc_zstd_level == 1);
  CHECK(d.rados_pushdown_compression == "zstd");
  auto level = env("ONECOPY_IPC_ZSTD_LEVEL", "9");
  REQUIRE(level.ok());
  CHECK(level->ipc_zstd_level == 9);
  CHECK_FALSE(env("ONECOPY_IPC_ZSTD_LEVEL", "0").ok());
  CHECK_FALSE(env("ONECOPY_IPC_ZSTD_LEVEL", "20").ok());
  auto none = env("ONECOPY_RADOS_PUSHDOWN_COMPRESSION", "NONE");
  REQUIRE(none.ok());
  CHECK(none->rados_pushdown_compression == "none");
  CHECK_FALSE(env("ONECOPY_RADOS_PUSHDOWN_COMPRESSION", "lz4").ok());
}

TEST_CASE("the fuzz seed asking for zstd decodes and runs", "[pushdown]") {
  // tests/fuzz/seeds/pushdown/req6.bin, written by flatc -b from JSON ("compression": 1).
  std::ifstream in(std::string(OC_SOURCE_DIR) + "/tests/fuzz/seeds/pushdown/req6.bin",
                   std::ios::binary);
  REQUIRE(in.good());
  const std::vector<uint8_t> req{std::istreambuf_iterator<char>(in),
                                 std::istreambuf_iterator<char>()};
  auto d = format::decode_pushdown_request(req, kMiB);
  REQUIRE(d.ok());
  CHECK(d->compression == format::IpcCompression::zstd);
  CHECK(d->columns == std::vector<std::string>{"id", "city", "tags"});
  const auto mixed = read_seed("mixed.vortex");
  REQUIRE(mixed.size() == d->file_size);
  PushdownRequest r = *d;
  const auto f = read_facts(check_scan(mixed, r));
  CHECK(f.fields == r.columns);
  CHECK(format::fuzz_pushdown(mixed, req).ok());
}
