// SPDX-License-Identifier: Apache-2.0
// The Arrow IPC stream reader (format/arrow_ipc_read.hpp): the writer's streams read back to
// equal columns for every type it writes (nulls, slices, empty batches, no batches, nested
// lists, structs and fixed-size lists, views and offsets), without copies where the input is
// aligned; pyarrow's streams (tests/format/golden/arrow_ipc/); and hostile input: every
// truncation, every bit flip, schemas other than the expected one, bad offsets, buffers out of
// the body, wrong counts, unsupported messages, a missing end marker, the decode limit; zstd
// bodies (every type round trip, pyarrow's, and hostile length prefixes and frames). Each is
// an error of the documented code, never a crash (the ASan build runs these). Also the fuzz
// target's seeds (tests/fuzz/seeds/arrow_ipc_read/), which the hidden test case below writes.
#include <flatbuffers/flatbuffers.h>
#include <zstd.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "format/arrow_ipc.hpp"
#include "format/arrow_ipc_fuzz.hpp"
#include "format/arrow_ipc_read.hpp"
#include "format/fbs/arrow_ipc_generated.h"
#include "format/string_views.hpp"
#include "tests/format/arrow_ipc_fixtures.hpp"
#include "tests/format/fixtures.hpp"
#include "tests/format/nested_golden.hpp"

using namespace oc;
using namespace oc::test;
using format::ArrowIpcOptions;
using format::ArrowIpcReadOptions;
using format::ArrowIpcWriter;
using format::Column;
using format::StringLayout;
using format::TypeKind;
namespace afb = oc::arrow_fb;

namespace {

// ---- streams ------------------------------------------------------------------------------------

std::string stream_of(const ArrowIpcWriter& w, const std::vector<ColumnPtr>& batches) {
  std::string out = w.schema_message().to_string();
  for (const ColumnPtr& b : batches) {
    auto m = w.batch_message(b);
    if (!m.ok()) FAIL(m.error().to_string());
    out += m->to_string();
  }
  out += ArrowIpcWriter::end_of_stream().to_string();
  return out;
}

ArrowIpcWriter writer_of(const DTypePtr& t, StringLayout strings = StringLayout::offsets) {
  auto w = ArrowIpcWriter::make(t, ArrowIpcOptions{.strings = strings});
  REQUIRE(w.ok());
  return std::move(w).value();
}

Buffer buffer_from(const std::string& s) {
  return Buffer::copy_of({reinterpret_cast<const uint8_t*>(s.data()), s.size()});
}

Result<std::vector<ColumnPtr>> read(const std::string& s, const DTypePtr& t,
                                    StringLayout strings = StringLayout::offsets) {
  return format::read_arrow_ipc_stream(buffer_from(s), t, ArrowIpcReadOptions{.strings = strings});
}

// Reads @p s, which must succeed.
std::vector<ColumnPtr> read_ok(const std::string& s, const DTypePtr& t,
                               StringLayout strings = StringLayout::offsets) {
  auto r = read(s, t, strings);
  if (!r.ok()) FAIL(r.error().to_string());
  return std::move(r).value();
}

// @p got is a batch read back from @p want: same dtype, rows, nulls and values, offset 0.
void require_same(const ColumnPtr& got, const ColumnPtr& want) {
  REQUIRE(*got->dtype == *want->dtype);
  REQUIRE(got->length == want->length);
  CHECK(got->offset == 0);
  CHECK(got->validity.empty());
  REQUIRE(got->children.size() == want->children.size());
  for (size_t i = 0; i < got->children.size(); ++i) {
    INFO("field " << i << " " << want->dtype->names[i]);
    const ColumnPtr want_field = format::slice(want->children[i], want->offset, want->length);
    CHECK(rows_of(*got->children[i]) == rows_of(*want_field));
    int64_t nulls = 0;
    for (uint64_t r = 0; r < want_field->length; ++r) nulls += !want_field->is_valid(r);
    if (want_field->dtype->kind != TypeKind::null) CHECK(got->children[i]->null_count == nulls);
  }
}

// ---- columns of every type the writer writes ----------------------------------------------------

ColumnPtr decimal_column(uint8_t precision, std::vector<std::optional<int64_t>> v) {
  const size_t w = precision <= 38 ? 16 : 32;
  auto t = std::make_shared<DType>();
  t->kind = TypeKind::decimal;
  t->precision = precision;
  t->scale = 2;
  auto c = std::make_shared<Column>();
  c->length = v.size();
  std::vector<uint8_t> bytes(v.size() * w, 0);
  c->validity = format::make_bitmap(v.size(), true);
  for (size_t i = 0; i < v.size(); ++i) {
    if (!v[i]) {
      format::bitmap_set(c->validity.mutable_data(), i, false);
      ++c->null_count;
      continue;
    }
    std::memcpy(bytes.data() + i * w, &*v[i], 8);
    if (*v[i] < 0) std::memset(bytes.data() + i * w + 8, 0xFF, w - 8);  // sign extension
  }
  if (c->null_count == 0) c->validity = Buffer();
  t->nullable = c->null_count > 0;
  c->dtype = t;
  c->buffers = {buffer_of(bytes)};
  return c;
}

ColumnPtr bools(const std::vector<std::optional<bool>>& v) {
  auto c = std::make_shared<Column>();
  c->length = v.size();
  Buffer bits = format::make_bitmap(v.size(), false);
  Buffer valid = format::make_bitmap(v.size(), true);
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i])
      format::bitmap_set(bits.mutable_data(), i, *v[i]);
    else {
      format::bitmap_set(valid.mutable_data(), i, false);
      ++c->null_count;
    }
  }
  c->dtype = DType::make_bool(c->null_count > 0);
  c->validity = c->null_count > 0 ? valid : Buffer();
  c->buffers = {bits};
  return c;
}

ColumnPtr nulls(uint64_t n) {
  auto c = format::make_all_null(DType::make_null(), n);
  REQUIRE(c.ok());
  return *c;
}

ColumnPtr nullable_struct(std::vector<std::string> names, std::vector<ColumnPtr> fields,
                          std::vector<bool> valid) {
  std::vector<DTypePtr> types;
  for (const auto& f : fields) types.push_back(f->dtype);
  auto c = std::make_shared<Column>();
  c->dtype = DType::make_struct(std::move(names), std::move(types), true);
  c->length = valid.size();
  c->validity = format::make_bitmap(valid.size(), true);
  for (size_t i = 0; i < valid.size(); ++i) {
    if (!valid[i]) {
      format::bitmap_set(c->validity.mutable_data(), i, false);
      ++c->null_count;
    }
  }
  c->children = std::move(fields);
  return c;
}

ColumnPtr nullable_list(ColumnPtr list, std::vector<bool> valid) {
  auto c = std::make_shared<Column>(*list);
  auto t = std::make_shared<DType>(*list->dtype);
  t->nullable = true;
  c->dtype = t;
  c->validity = format::make_bitmap(valid.size(), true);
  c->null_count = 0;
  for (size_t i = 0; i < valid.size(); ++i) {
    if (!valid[i]) {
      format::bitmap_set(c->validity.mutable_data(), i, false);
      ++c->null_count;
    }
  }
  return c;
}

// One batch of @p n rows (n <= 8 values cycle) of every type the writer writes, flat and nested.
ColumnPtr every_type(uint64_t n) {
  using nested_golden::make_temporal;
  auto cyc = [n](auto values) {
    decltype(values) out;
    for (uint64_t i = 0; i < n; ++i) out.push_back(values[i % values.size()]);
    return out;
  };
  using OI = std::optional<int64_t>;
  using OS = std::optional<std::string>;
  // list<utf8?>: row i holds i % 3 strings
  std::vector<int32_t> offs{0};
  std::vector<OS> items;
  std::vector<std::optional<int32_t>> deep_items;
  std::vector<int32_t> deep_offs{0};
  for (uint64_t i = 0; i < n; ++i) {
    for (uint64_t k = 0; k < i % 3; ++k) {
      items.push_back(k == 1 ? OS() : OS(std::string(i + k, 'p')));
    }
    offs.push_back(static_cast<int32_t>(items.size()));
  }
  // list<struct{v: list<i32?>}>: the innermost lists hold i % 2 values
  for (uint64_t i = 0; i < static_cast<uint64_t>(offs.back()); ++i) {
    for (uint64_t k = 0; k < i % 2 + 1; ++k) {
      deep_items.push_back(k == 1 ? std::optional<int32_t>()
                                  : std::optional<int32_t>(static_cast<int32_t>(i)));
    }
    deep_offs.push_back(static_cast<int32_t>(deep_items.size()));
  }
  auto inner = list_of(prim<int32_t>(PType::i32, deep_items), deep_offs);
  auto rec = batch_of({inner}, inner->length);  // a struct of one field, v
  std::vector<std::optional<float>> floats;
  for (uint64_t i = 0; i < 3 * n; ++i) floats.push_back(static_cast<float>(i) / 4);
  std::vector<bool> struct_valid;
  for (uint64_t i = 0; i < n; ++i) struct_valid.push_back(i % 4 != 2);
  auto i64 = prim<int64_t>(PType::i64,
                           cyc(std::vector<OI>{1, OI(), -3, INT64_MAX, INT64_MIN, 0, 7, OI()}));
  auto u16 = prim<uint16_t>(PType::u16, cyc(std::vector<std::optional<uint16_t>>{1, 65535, 0, 9}));
  auto i8 = prim<int8_t>(PType::i8, cyc(std::vector<std::optional<int8_t>>{-1, std::nullopt, 5}));
  auto f64 = prim<double>(PType::f64, cyc(std::vector<std::optional<double>>{0.5, -2.25, 1e300}));
  auto f16 =
      prim<uint16_t>(PType::f16, cyc(std::vector<std::optional<uint16_t>>{0x3c00, std::nullopt}));
  auto s = strs(
      cyc(std::vector<OS>{"a", OS(), "", "a string longer than twelve bytes", "twelve chars"}));
  auto bin = strs(cyc(std::vector<OS>{std::string("\0\1", 2), "", "xyz"}), true);
  auto day =
      with_dtype(prim<int32_t>(PType::i32, cyc(std::vector<std::optional<int32_t>>{0, 19000, -1})),
                 make_temporal("vortex.date", format::TimeUnit::days, PType::i32, false));
  auto ts =
      with_dtype(prim<int64_t>(PType::i64, cyc(std::vector<OI>{0, OI(), 1700000000000000})),
                 make_temporal("vortex.timestamp", format::TimeUnit::us, PType::i64, true, "UTC"));
  auto tm =
      with_dtype(prim<int32_t>(PType::i32, cyc(std::vector<std::optional<int32_t>>{1, 86399})),
                 make_temporal("vortex.time", format::TimeUnit::s, PType::i32, false));
  std::vector<bool> list_valid;
  for (uint64_t i = 0; i < n; ++i) list_valid.push_back(i % 5 != 4 || i % 3 == 0);
  return batch_of(
      {i64, u16, i8, f64, f16,
       bools(cyc(std::vector<std::optional<bool>>{true, std::nullopt, false})), s, bin, nulls(n),
       decimal_column(10, cyc(std::vector<OI>{125, OI(), -350})),
       decimal_column(50, cyc(std::vector<OI>{1, -2})), day, ts, tm,
       nullable_list(list_of(strs(items), offs), list_valid),
       fixed_list_of(prim<float>(PType::f32, floats), 3),
       nullable_struct(
           {"x", "y"},
           {prim<int32_t>(PType::i32, cyc(std::vector<std::optional<int32_t>>{1, std::nullopt})),
            strs(cyc(std::vector<OS>{"u", "v", OS()}))},
           struct_valid),
       list_of(rec, offs)},
      n);
}

// ---- hand-built messages, for what the writer never writes --------------------------------------

// Frames a finished `Message` flatbuffer with @p body, as the writer does.
std::string framed(flatbuffers::FlatBufferBuilder& b, const std::string& body = {}) {
  std::string meta(reinterpret_cast<const char*>(b.GetBufferPointer()), b.GetSize());
  meta.resize((meta.size() + 7) / 8 * 8, '\0');
  std::string out("\xFF\xFF\xFF\xFF", 4);
  const auto len = static_cast<int32_t>(meta.size());
  out.append(reinterpret_cast<const char*>(&len), 4);
  return out + meta + body;
}

struct HandBatch {
  int64_t length = 0;
  std::vector<afb::FieldNode> nodes;
  std::vector<afb::Buffer> buffers;
  std::optional<std::vector<int64_t>> variadic;
  std::string body;
  std::optional<afb::CompressionType> codec;  // BodyCompression, when set
  afb::BodyCompressionMethod method = afb::BodyCompressionMethod::BUFFER;
  afb::MetadataVersion version = afb::MetadataVersion::V5;
  std::optional<int64_t> body_length;  // the body's size unless set
};

std::string hand_batch(const HandBatch& h) {
  flatbuffers::FlatBufferBuilder b;
  const auto nodes = b.CreateVectorOfStructs(h.nodes);
  const auto buffers = b.CreateVectorOfStructs(h.buffers);
  const auto variadic = h.variadic ? b.CreateVector(*h.variadic)
                                   : flatbuffers::Offset<flatbuffers::Vector<int64_t>>();
  const auto compression = h.codec ? afb::CreateBodyCompression(b, *h.codec, h.method)
                                   : flatbuffers::Offset<afb::BodyCompression>();
  const auto rb = afb::CreateRecordBatch(b, h.length, nodes, buffers, compression, variadic);
  b.Finish(afb::CreateMessage(b, h.version, afb::MessageHeader::RecordBatch, rb.Union(),
                              h.body_length.value_or(static_cast<int64_t>(h.body.size()))));
  return framed(b, h.body);
}

template <class T>
std::string raw(const std::vector<T>& v) {
  std::string s(v.size() * sizeof(T), '\0');
  if (!v.empty()) std::memcpy(s.data(), v.data(), s.size());
  s.resize((s.size() + 7) / 8 * 8, '\0');
  return s;
}

const std::string kEnd("\xFF\xFF\xFF\xFF\0\0\0\0", 8);

void require_error(const Result<std::vector<ColumnPtr>>& r, Errc code,
                   const std::string& says = {}) {
  REQUIRE(!r.ok());
  INFO(r.error().to_string());
  CHECK(r.error().code() == code);
  if (!says.empty()) CHECK(r.error().message().find(says) != std::string::npos);
}

std::string source_path(const std::string& rel) { return std::string(OC_SOURCE_DIR) + "/" + rel; }

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in.good());
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

TEST_CASE("every type the writer writes reads back equal", "[format][arrow_ipc_read]") {
  const StringLayout layout = GENERATE(StringLayout::offsets, StringLayout::views);
  INFO("views: " << (layout == StringLayout::views));
  const ColumnPtr b = every_type(8);
  const auto w = writer_of(b->dtype, layout);
  // Whole, sliced off byte boundaries, one row, no rows; and a batch of no rows on its own.
  const std::vector<ColumnPtr> batches = {b, format::slice(b, 3, 5), format::slice(b, 7, 1),
                                          format::slice(b, 2, 0),
                                          with_dtype(every_type(0), b->dtype)};
  const auto got = read_ok(stream_of(w, batches), b->dtype, layout);
  REQUIRE(got.size() == batches.size());
  for (size_t i = 0; i < batches.size(); ++i) {
    INFO("batch " << i);
    require_same(got[i], batches[i]);
  }
  // Strings come back in the layout the stream has.
  CHECK(got[0]->children[6]->string_views == (layout == StringLayout::views));
  CHECK(got[0]->children[14]->children[0]->string_views == (layout == StringLayout::views));
}

TEST_CASE("a stream without batches, and batches without fields", "[format][arrow_ipc_read]") {
  const ColumnPtr b = every_type(4);
  CHECK(read_ok(stream_of(writer_of(b->dtype), {}), b->dtype).empty());
  const ColumnPtr none = batch_of({}, 9);
  const auto got = read_ok(stream_of(writer_of(none->dtype), {none, batch_of({}, 0)}), none->dtype);
  REQUIRE(got.size() == 2);
  CHECK(got[0]->length == 9);
  CHECK(got[0]->children.empty());
  CHECK(got[1]->length == 0);
}

TEST_CASE("aligned buffers are slices of the input; misaligned ones are copied",
          "[format][arrow_ipc_read]") {
  auto i = prim<int64_t>(PType::i64, {1, std::nullopt, 3});
  auto s = strs({"abc", "", "de"});
  const ColumnPtr b = batch_of({i, s}, 3);
  const std::string bytes = stream_of(writer_of(b->dtype), {b});
  const Buffer aligned = buffer_from(bytes);
  auto got = format::read_arrow_ipc_stream(aligned, b->dtype);
  REQUIRE(got.ok());
  auto inside = [&](const Buffer& x) {
    return x.data() >= aligned.data() && x.data() + x.size() <= aligned.data() + aligned.size();
  };
  const Column& gi = *(*got)[0]->children[0];
  CHECK(inside(gi.validity));
  CHECK(inside(gi.buffers[0]));
  CHECK(inside((*got)[0]->children[1]->buffers[0]));
  CHECK(inside((*got)[0]->children[1]->buffers[1]));

  // The same stream one byte into an allocation: values come out right all the same.
  Buffer shifted = Buffer::allocate(bytes.size() + 1);
  std::memcpy(shifted.mutable_data() + 1, bytes.data(), bytes.size());
  const Buffer odd = shifted.slice(1, bytes.size());
  auto copied = format::read_arrow_ipc_stream(odd, b->dtype);
  REQUIRE(copied.ok());
  require_same((*copied)[0], b);
  const Column& ci = *(*copied)[0]->children[0];
  CHECK(reinterpret_cast<uintptr_t>(ci.buffers[0].data()) % alignof(int64_t) == 0);
  CHECK(reinterpret_cast<uintptr_t>((*copied)[0]->children[1]->buffers[0].data()) %
            alignof(int32_t) ==
        0);
}

TEST_CASE("pyarrow's streams read as the same columns", "[format][arrow_ipc_read]") {
  using nested_golden::make_temporal;
  using OS = std::optional<std::string>;
  SECTION("offsets: two batches of every type") {
    // The values of make_arrow_ipc_golden.py's offsets_table().
    auto pair = fixed_list_of(prim<float>(PType::f32, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}), 2);
    auto st = nullable_struct(
        {"a", "b"},
        {prim<int32_t>(PType::i32, {1, 0, 3, 4, 5}), strs({"x", OS(), OS(), "yy", "z"})},
        {true, false, true, true, true});
    auto dec = decimal_column(10, {125, std::nullopt, -350, 1234567890, 0});
    const ColumnPtr want = batch_of(
        {prim<int64_t>(PType::i64, {1, std::nullopt, 3, -4, std::nullopt}),
         prim<uint8_t>(PType::u8, {1, 2, 3, 4, 255}),
         prim<double>(PType::f64, {0.5, -1.25, 3.0, 1e300, 0.0}),
         bools({true, std::nullopt, false, true, false}),
         strs({"a", OS(), "ccc", "", "a longer string value"}),
         strs({std::string("\0\1", 2), "", "xyz", "\xff", "q"}, true), nulls(5), dec,
         with_dtype(prim<int32_t>(PType::i32, {0, 1, 19000, -1, 365}),
                    make_temporal("vortex.date", format::TimeUnit::days, PType::i32, false)),
         with_dtype(
             prim<int64_t>(PType::i64, {0, 1700000000000000, -1, 42, 7}),
             make_temporal("vortex.timestamp", format::TimeUnit::us, PType::i64, false, "UTC")),
         list_of(prim<int32_t>(PType::i32, {1, 2, 3, 4, 5, 6}), {0, 2, 2, 3, 6, 6}), pair, st},
        5);
    std::vector<std::string> names = {"i64", "u8",  "f64", "flag", "s",    "bin", "nothing",
                                      "dec", "day", "ts",  "tags", "pair", "st"};
    auto t = DType::make_struct(names, want->dtype->children, false);
    const ColumnPtr named = with_dtype(want, t);
    const auto got =
        read_ok(slurp(source_path("tests/format/golden/arrow_ipc/pyarrow_offsets.arrows")), t);
    REQUIRE(got.size() == 2);
    require_same(got[0], format::slice(named, 0, 3));
    require_same(got[1], format::slice(named, 3, 2));
  }
  SECTION("views") {
    const ColumnPtr sv =
        strs({"short", OS(), "a value longer than twelve bytes", "", "twelve bytes"});
    const ColumnPtr bv =
        strs({"\x01", "thirteen byte", "", "another long binary value", "x"}, true);
    const auto t = DType::make_struct({"sv", "bv"}, {sv->dtype, bv->dtype}, false);
    const ColumnPtr want = with_dtype(batch_of({sv, bv}, 5), t);
    const std::string bytes =
        slurp(source_path("tests/format/golden/arrow_ipc/pyarrow_views.arrows"));
    const auto got = read_ok(bytes, t, StringLayout::views);
    REQUIRE(got.size() == 1);
    require_same(got[0], want);
    CHECK(got[0]->children[0]->string_views);
    // Read as offsets, the schema is not the expected one.
    require_error(read(bytes, t, StringLayout::offsets), Errc::protocol, "\"sv\"");
  }
}

TEST_CASE("a schema other than the expected one is a protocol error naming the field",
          "[format][arrow_ipc_read]") {
  auto i = prim<int32_t>(PType::i32, {1, 2});
  auto s = strs({"a", std::nullopt});
  auto l = list_of(prim<int64_t>(PType::i64, {1, 2, 3}), {0, 1, 3});
  auto inner = nullable_struct({"deep"}, {prim<int16_t>(PType::i16, {1, 2})}, {true, true});
  const ColumnPtr b = batch_of({i, s, l, inner}, 2);  // f0, f1, f2, f3
  const std::string bytes = stream_of(writer_of(b->dtype), {b});
  const auto& kids = b->dtype->children;
  auto expect = [&](std::vector<std::string> names, std::vector<DTypePtr> types,
                    const std::string& says) {
    require_error(read(bytes, DType::make_struct(std::move(names), std::move(types), false)),
                  Errc::protocol, says);
  };
  expect({"f0", "renamed", "f2", "f3"}, kids, "\"renamed\"");
  expect({"f0", "f1", "f2"}, {kids[0], kids[1], kids[2]}, "fields");
  expect({"f0", "f1", "f2", "f3"},
         {DType::make_primitive(PType::i64, false), kids[1], kids[2], kids[3]},
         "\"f0\" is Int(32, signed) in the stream, expected Int(64, signed)");
  expect({"f0", "f1", "f2", "f3"},
         {DType::make_primitive(PType::u32, false), kids[1], kids[2], kids[3]}, "unsigned");
  expect({"f0", "f1", "f2", "f3"}, {kids[0], DType::make_utf8(false), kids[2], kids[3]},
         "nullable");
  expect({"f0", "f1", "f2", "f3"}, {kids[0], DType::make_binary(true), kids[2], kids[3]}, "\"f1\"");
  auto list_i32 = std::make_shared<DType>(*kids[2]);
  list_i32->children = {DType::make_primitive(PType::i32, false)};
  expect({"f0", "f1", "f2", "f3"}, {kids[0], kids[1], list_i32, kids[3]}, "\"f2\".item");
  expect({"f0", "f1", "f2", "f3"},
         {kids[0], kids[1], kids[2],
          DType::make_struct({"other"}, {DType::make_primitive(PType::i16, false)}, true)},
         "\"f3\".other");
  // Views expected, offsets written.
  require_error(read(bytes, b->dtype, StringLayout::views), Errc::protocol, "Utf8View");
  // A timestamp's zone and unit are part of its type.
  using nested_golden::make_temporal;
  auto ts =
      with_dtype(prim<int64_t>(PType::i64, {1}),
                 make_temporal("vortex.timestamp", format::TimeUnit::us, PType::i64, false, "UTC"));
  const std::string ts_bytes = stream_of(writer_of(batch_of({ts}, 1)->dtype), {batch_of({ts}, 1)});
  require_error(
      read(ts_bytes, DType::make_struct({"f0"},
                                        {make_temporal("vortex.timestamp", format::TimeUnit::us,
                                                       PType::i64, false, "Europe/Oslo")},
                                        false)),
      Errc::protocol, "Europe/Oslo");
  require_error(
      read(ts_bytes, DType::make_struct({"f0"},
                                        {make_temporal("vortex.timestamp", format::TimeUnit::ns,
                                                       PType::i64, false, "UTC")},
                                        false)),
      Errc::protocol, "NANOSECOND");
}

TEST_CASE("every truncation of a stream is corrupt", "[format][arrow_ipc_read]") {
  const StringLayout layout = GENERATE(StringLayout::offsets, StringLayout::views);
  const ColumnPtr b = every_type(5);
  const std::string bytes = stream_of(writer_of(b->dtype, layout), {b, format::slice(b, 1, 2)});
  for (size_t n = 0; n < bytes.size(); ++n) {
    const auto r = read(bytes.substr(0, n), b->dtype, layout);
    if (r.ok() || r.error().code() != Errc::corrupt) {
      INFO("truncated to " << n << " of " << bytes.size());
      REQUIRE(!r.ok());
      CHECK(r.error().code() == Errc::corrupt);
    }
  }
  require_error(read(bytes.substr(0, bytes.size() - 8), b->dtype, layout), Errc::corrupt,
                "without its end-of-stream marker");
  require_error(read(bytes + std::string(8, '\0'), b->dtype, layout), Errc::corrupt,
                "after its end-of-stream marker");
}

TEST_CASE("every bit flip of a stream is read or refused, never a crash",
          "[format][arrow_ipc_read]") {
  const StringLayout layout = GENERATE(StringLayout::offsets, StringLayout::views);
  auto l = list_of(strs({"ab", std::nullopt, "a string longer than twelve bytes"}), {0, 2, 2, 3});
  const ColumnPtr b = batch_of({prim<int16_t>(PType::i16, {1, std::nullopt, 3}), l,
                                fixed_list_of(prim<int8_t>(PType::i8, {1, 2, 3, 4, 5, 6}), 2)},
                               3);
  const std::string bytes = stream_of(writer_of(b->dtype, layout), {b});
  size_t read_fine = 0, refused = 0;
  for (size_t bit = 0; bit < bytes.size() * 8; ++bit) {
    std::string flipped = bytes;
    flipped[bit / 8] = static_cast<char>(flipped[bit / 8] ^ (1 << (bit % 8)));
    const auto r = read(flipped, b->dtype, layout);
    if (!r.ok()) {
      ++refused;
      continue;
    }
    ++read_fine;
    // Whatever was accepted is readable to the last byte (ASan checks), and writable again.
    for (const ColumnPtr& batch : *r) {
      (void)rows_of(*batch);
      REQUIRE(writer_of(b->dtype, layout).batch_message(batch).ok());
    }
  }
  CHECK(refused > 0);
  CHECK(read_fine > 0);  // flips in values and padding change nothing the checks see
}

TEST_CASE("bad offsets are corrupt", "[format][arrow_ipc_read]") {
  // Falling offsets pass the writer's first/last check, not the reader's.
  auto s = std::make_shared<Column>(*strs({"abcde", "f", "g"}));
  s->buffers[0] = buffer_of(std::vector<int32_t>{0, 5, 2, 7});
  s->buffers[1] = bytes_of("abcdefg");
  const ColumnPtr b = batch_of({s}, 3);
  require_error(read(stream_of(writer_of(b->dtype), {b}), b->dtype), Errc::corrupt, "falling");

  const auto t = DType::make_struct({"s"}, {DType::make_utf8(false)}, false);
  auto with_offsets = [&](std::vector<int32_t> offsets, const std::string& bytes) {
    HandBatch h;
    h.length = static_cast<int64_t>(offsets.size() - 1);
    h.nodes = {afb::FieldNode(h.length, 0)};
    const std::string o = raw(offsets);
    h.buffers = {afb::Buffer(0, 0), afb::Buffer(0, static_cast<int64_t>(offsets.size() * 4)),
                 afb::Buffer(static_cast<int64_t>(o.size()), static_cast<int64_t>(bytes.size()))};
    h.body = o + bytes;
    h.body.resize((h.body.size() + 7) / 8 * 8, '\0');
    return writer_of(t).schema_message().to_string() + hand_batch(h) + kEnd;
  };
  CHECK(read(with_offsets({0, 1, 3}, "abc"), t).ok());
  require_error(read(with_offsets({0, 1, 50}, "abc"), t), Errc::corrupt, "offsets up to 50");
  require_error(read(with_offsets({-4, 1, 3}, "abc"), t), Errc::corrupt, "starts at offset -4");
  require_error(read(with_offsets({0, 3, 1}, "abc"), t), Errc::corrupt, "falling");

  // A list whose offsets reach past its elements.
  const auto lt =
      DType::make_struct({"l"}, {list_of(prim<int32_t>(PType::i32, {}), {0})->dtype}, false);
  HandBatch h;
  h.length = 2;
  h.nodes = {afb::FieldNode(2, 0), afb::FieldNode(1, 0)};
  h.body = raw(std::vector<int32_t>{0, 1, 2}) + raw(std::vector<int32_t>{7});
  h.buffers = {afb::Buffer(0, 0), afb::Buffer(0, 12), afb::Buffer(0, 0), afb::Buffer(16, 4)};
  require_error(read(writer_of(lt).schema_message().to_string() + hand_batch(h) + kEnd, lt),
                Errc::corrupt, "offsets up to 2 over 1 elements");
}

TEST_CASE("nodes, buffers and counts that do not fit the body are corrupt",
          "[format][arrow_ipc_read]") {
  const auto t = DType::make_struct({"v"}, {DType::make_primitive(PType::i32, true)}, false);
  const std::string schema = writer_of(t).schema_message().to_string();
  auto batch = [&](auto edit) {
    HandBatch h;
    h.length = 2;
    h.nodes = {afb::FieldNode(2, 1)};
    h.body = raw(std::vector<uint8_t>{0b01}) + raw(std::vector<int32_t>{5, 0});
    h.buffers = {afb::Buffer(0, 1), afb::Buffer(8, 8)};
    edit(h);
    return read(schema + hand_batch(h) + kEnd, t);
  };
  REQUIRE(batch([](HandBatch&) {}).ok());
  require_error(batch([](HandBatch& h) { h.buffers[1] = afb::Buffer(16, 8); }), Errc::corrupt,
                "body");
  require_error(batch([](HandBatch& h) { h.buffers[1] = afb::Buffer(8, -1); }), Errc::corrupt,
                "body");
  require_error(batch([](HandBatch& h) { h.buffers[1] = afb::Buffer(-8, 8); }), Errc::corrupt,
                "body");
  require_error(batch([](HandBatch& h) { h.buffers[1] = afb::Buffer(INT64_MAX, INT64_MAX); }),
                Errc::corrupt, "body");
  require_error(batch([](HandBatch& h) { h.buffers[1] = afb::Buffer(8, 4); }), Errc::corrupt,
                "4 bytes");
  require_error(batch([](HandBatch& h) { h.buffers.pop_back(); }), Errc::corrupt, "buffers");
  require_error(batch([](HandBatch& h) { h.buffers.push_back(afb::Buffer(0, 0)); }), Errc::corrupt,
                "buffers");
  require_error(batch([](HandBatch& h) { h.nodes.clear(); }), Errc::corrupt, "field nodes");
  require_error(batch([](HandBatch& h) { h.nodes.push_back(afb::FieldNode(2, 0)); }), Errc::corrupt,
                "field nodes");
  require_error(batch([](HandBatch& h) { h.nodes[0] = afb::FieldNode(2, 3); }), Errc::corrupt,
                "3 nulls");
  require_error(batch([](HandBatch& h) { h.nodes[0] = afb::FieldNode(-2, 0); }), Errc::corrupt,
                "-2 rows");
  require_error(batch([](HandBatch& h) { h.nodes[0] = afb::FieldNode(2, 0); }), Errc::corrupt,
                "says 0 nulls, its validity has 1");
  require_error(batch([](HandBatch& h) { h.nodes[0] = afb::FieldNode(3, 1); }), Errc::corrupt,
                "parent");
  require_error(batch([](HandBatch& h) { h.length = -1; }), Errc::corrupt, "-1 rows");
  require_error(batch([](HandBatch& h) { h.buffers[0] = afb::Buffer(0, 0); }), Errc::corrupt,
                "no validity");
  require_error(batch([](HandBatch& h) { h.body_length = 1000; }), Errc::corrupt,
                "body of 1000 bytes");
  require_error(batch([](HandBatch& h) { h.variadic = std::vector<int64_t>{0}; }), Errc::corrupt,
                "variadic");
  require_error(batch([](HandBatch& h) { h.codec = afb::CompressionType::LZ4_FRAME; }),
                Errc::unsupported, "only ZSTD");
  require_error(batch([](HandBatch& h) { h.version = afb::MetadataVersion::V4; }),
                Errc::unsupported, "V5");

  // A non-nullable field with nulls.
  const auto strict = DType::make_struct({"v"}, {DType::make_primitive(PType::i32, false)}, false);
  HandBatch h;
  h.length = 2;
  h.nodes = {afb::FieldNode(2, 1)};
  h.body = raw(std::vector<uint8_t>{0b01}) + raw(std::vector<int32_t>{5, 0});
  h.buffers = {afb::Buffer(0, 1), afb::Buffer(8, 8)};
  require_error(read(writer_of(strict).schema_message().to_string() + hand_batch(h) + kEnd, strict),
                Errc::corrupt, "not nullable");
}

TEST_CASE("views, fixed-size lists and structs are checked against their nodes",
          "[format][arrow_ipc_read]") {
  SECTION("views") {
    const auto t = DType::make_struct({"s"}, {DType::make_utf8(false)}, false);
    const std::string schema = writer_of(t, StringLayout::views).schema_message().to_string();
    auto batch = [&](int32_t size, int32_t index, int32_t offset,
                     std::optional<std::vector<int64_t>> variadic) {
      std::string view(16, '\0');
      std::memcpy(view.data(), &size, 4);
      std::memcpy(view.data() + 4, "abcd", 4);
      std::memcpy(view.data() + 8, &index, 4);
      std::memcpy(view.data() + 12, &offset, 4);
      HandBatch h;
      h.length = 1;
      h.nodes = {afb::FieldNode(1, 0)};
      h.body = view + raw(std::vector<char>(std::begin("abcdefghijklmnopq"),
                                            std::end("abcdefghijklmnopq") - 1));
      h.buffers = {afb::Buffer(0, 0), afb::Buffer(0, 16), afb::Buffer(16, 17)};
      h.variadic = std::move(variadic);
      return read(schema + hand_batch(h) + kEnd, t, StringLayout::views);
    };
    REQUIRE(batch(14, 0, 0, std::vector<int64_t>{1}).ok());
    CHECK(strings_of(*(*batch(14, 0, 0, std::vector<int64_t>{1}))[0]->children[0])[0] ==
          "abcdefghijklmn");
    require_error(batch(14, 0, 10, std::vector<int64_t>{1}),
                  Errc::corrupt);                                            // past its data buffer
    require_error(batch(14, 1, 0, std::vector<int64_t>{1}), Errc::corrupt);  // no data buffer 1
    require_error(batch(14, 0, 0, std::nullopt), Errc::corrupt, "variadic");
    require_error(batch(14, 0, 0, std::vector<int64_t>{2}), Errc::corrupt, "data buffers");
    require_error(batch(14, 0, 0, std::vector<int64_t>{-1}), Errc::corrupt, "data buffers");
    require_error(batch(14, 0, 0, std::vector<int64_t>{1, 0}), Errc::corrupt, "variadic");
  }
  SECTION("fixed-size lists and structs") {
    auto fsl = fixed_list_of(prim<int8_t>(PType::i8, {1, 2, 3, 4}), 2);
    const auto t = DType::make_struct({"p"}, {fsl->dtype}, false);
    HandBatch h;
    h.length = 2;
    h.nodes = {afb::FieldNode(2, 0), afb::FieldNode(3, 0)};
    h.body = raw(std::vector<int8_t>{1, 2, 3, 4});
    h.buffers = {afb::Buffer(0, 0), afb::Buffer(0, 0), afb::Buffer(0, 4)};
    require_error(read(writer_of(t).schema_message().to_string() + hand_batch(h) + kEnd, t),
                  Errc::corrupt, "\"p\".item has 3 rows, its parent 4");
    const auto st = DType::make_struct(
        {"r"}, {DType::make_struct({"a"}, {DType::make_primitive(PType::i8, false)}, false)},
        false);
    h.nodes = {afb::FieldNode(2, 0), afb::FieldNode(4, 0)};
    h.buffers = {afb::Buffer(0, 0), afb::Buffer(0, 0), afb::Buffer(0, 4)};
    require_error(read(writer_of(st).schema_message().to_string() + hand_batch(h) + kEnd, st),
                  Errc::corrupt, "\"r\".a has 4 rows, its parent 2");
  }
}

TEST_CASE("framing, message kinds and the end marker", "[format][arrow_ipc_read]") {
  const ColumnPtr b = batch_of({prim<int32_t>(PType::i32, {1, 2, 3})}, 3);
  const auto w = writer_of(b->dtype);
  const std::string schema = w.schema_message().to_string();
  const std::string batch = w.batch_message(b)->to_string();
  CHECK(read_ok(schema + batch + kEnd, b->dtype).size() == 1);
  require_error(read("", b->dtype), Errc::corrupt, "end-of-stream");
  require_error(read(kEnd, b->dtype), Errc::corrupt, "before its schema");
  require_error(read(batch + kEnd, b->dtype), Errc::corrupt, "before the schema");
  require_error(read(schema + schema + kEnd, b->dtype), Errc::corrupt, "second schema");
  require_error(read(schema + batch, b->dtype), Errc::corrupt, "end-of-stream");
  // The pre-0.15 framing without the continuation marker.
  require_error(read(schema.substr(4) + kEnd, b->dtype), Errc::corrupt, "continuation");
  std::string odd = schema;
  odd[4] = static_cast<char>(odd[4] + 1);  // metadata size not a multiple of 8
  require_error(read(odd + kEnd, b->dtype), Errc::corrupt, "multiple of 8");
  std::string negative = schema;
  negative[7] = '\x80';
  require_error(read(negative + kEnd, b->dtype), Errc::corrupt, "multiple of 8");
  std::string garbage = schema;
  std::memset(garbage.data() + 8, 0xAB, garbage.size() - 8);
  require_error(read(garbage + kEnd, b->dtype), Errc::corrupt, "verification");

  flatbuffers::FlatBufferBuilder d;
  d.Finish(afb::CreateMessage(d, afb::MetadataVersion::V5, afb::MessageHeader::DictionaryBatch,
                              afb::CreateDictionaryBatch(d).Union(), 0));
  require_error(read(schema + framed(d) + kEnd, b->dtype), Errc::unsupported, "dictionary batch");
  flatbuffers::FlatBufferBuilder tensor;
  tensor.Finish(afb::CreateMessage(tensor, afb::MetadataVersion::V5,
                                   static_cast<afb::MessageHeader>(4),
                                   afb::CreateNull(tensor).Union(), 0));
  require_error(read(schema + framed(tensor) + kEnd, b->dtype), Errc::unsupported, "not read");

  // A dictionary-encoded field, and a big-endian schema.
  auto schema_with = [&](bool dictionary, afb::Endianness e) {
    flatbuffers::FlatBufferBuilder s;
    const auto type = afb::CreateInt(s, 32, true);
    const auto f = afb::CreateField(s, s.CreateString("f0"), false, afb::Type::Int, type.Union(),
                                    dictionary ? afb::CreateDictionaryEncoding(s)
                                               : flatbuffers::Offset<afb::DictionaryEncoding>(),
                                    s.CreateVector(std::vector<flatbuffers::Offset<afb::Field>>{}));
    const auto sch = afb::CreateSchema(s, e, s.CreateVector(std::vector{f}));
    s.Finish(afb::CreateMessage(s, afb::MetadataVersion::V5, afb::MessageHeader::Schema,
                                sch.Union(), 0));
    return framed(s);
  };
  CHECK(read_ok(schema_with(false, afb::Endianness::Little) + batch + kEnd, b->dtype).size() == 1);
  require_error(read(schema_with(true, afb::Endianness::Little) + batch + kEnd, b->dtype),
                Errc::unsupported, "dictionary encoded");
  require_error(read(schema_with(false, afb::Endianness::Big) + batch + kEnd, b->dtype),
                Errc::unsupported, "big endian");
}

TEST_CASE("the decode bound and the depth bound", "[format][arrow_ipc_read]") {
  std::vector<std::optional<int64_t>> v(1000, 7);
  const ColumnPtr b = batch_of({prim<int64_t>(PType::i64, v)}, 1000);
  const std::string bytes = stream_of(writer_of(b->dtype), {b, b});
  ArrowIpcReadOptions o;
  o.max_decoded_bytes = 12'000;  // one batch (8000 bytes + 1000 rows x 2), not two
  auto r = format::read_arrow_ipc_stream(buffer_from(bytes), b->dtype, o);
  require_error(r, Errc::out_of_memory, "max_decoded_bytes");
  o.max_decoded_bytes = 24'000;
  CHECK(format::read_arrow_ipc_stream(buffer_from(bytes), b->dtype, o).ok());

  // Null columns have no buffers, so their rows count: a trillion of them is refused.
  const auto nt = DType::make_struct({"n"}, {DType::make_null()}, false);
  HandBatch h;
  h.length = int64_t{1} << 40;
  h.nodes = {afb::FieldNode(h.length, h.length)};
  require_error(read(writer_of(nt).schema_message().to_string() + hand_batch(h) + kEnd, nt),
                Errc::out_of_memory);
  h.length = 5;
  h.nodes = {afb::FieldNode(5, 5)};
  const auto few = read_ok(writer_of(nt).schema_message().to_string() + hand_batch(h) + kEnd, nt);
  CHECK(few[0]->children[0]->null_count == 5);
  h.nodes = {afb::FieldNode(5, 0)};
  require_error(read(writer_of(nt).schema_message().to_string() + hand_batch(h) + kEnd, nt),
                Errc::corrupt, "null field");

  // An expected dtype deeper than max_array_depth.
  DTypePtr deep = DType::make_primitive(PType::i8, false);
  for (uint32_t i = 0; i < defaults().max_array_depth + 2; ++i) {
    auto l = std::make_shared<DType>();
    l->kind = TypeKind::list;
    l->children = {deep};
    deep = l;
  }
  require_error(read(kEnd, DType::make_struct({"d"}, {deep}, false)), Errc::invalid,
                "max_array_depth");
  require_error(read(kEnd, DType::make_utf8(false)), Errc::invalid, "struct");
}

// ---- the fuzz target's seeds --------------------------------------------------------------------

namespace {

// Batches of the fuzz entry's dtypes, from this file's columns: the seeds are these, written.
std::vector<std::pair<std::string, std::string>> fuzz_seeds() {
  using nested_golden::make_temporal;
  using OS = std::optional<std::string>;
  const auto dtypes = format::arrow_ipc_fuzz_dtypes();
  REQUIRE(dtypes.size() == 3);
  auto named = [&](size_t k, std::vector<ColumnPtr> fields, uint64_t n) {
    return with_dtype(batch_of(std::move(fields), n), dtypes[k]);
  };
  const ColumnPtr flat = named(0,
                               {prim<int64_t>(PType::i64, {1, std::nullopt, 3, 4}),
                                strs({"a", OS(), "a string longer than twelve bytes", ""}),
                                bools({true, std::nullopt, false, true}),
                                prim<double>(PType::f64, {0.5, 1, 2, 3}), nulls(4)},
                               4);
  auto ls =
      nullable_list(list_of(strs({"x", OS(), "a string longer than twelve bytes"}), {0, 2, 2, 3}),
                    {true, false, true});
  auto st =
      nullable_struct({"a", "b"}, {prim<int32_t>(PType::i32, {1, 2, 3}), strs({"u", OS(), "w"})},
                      {true, true, false});
  const ColumnPtr nested =
      named(1,
            {list_of(prim<int32_t>(PType::i32, {1, 2, 3}), {0, 1, 1, 3}), ls,
             fixed_list_of(prim<float>(PType::f32, {1, 2, 3, 4, 5, 6}), 2), st},
            3);
  auto ext = [](ColumnPtr c, DTypePtr t) { return with_dtype(std::move(c), std::move(t)); };
  const auto& tk = dtypes[2]->children;
  const ColumnPtr typed =
      named(2,
            {decimal_column(10, {125, std::nullopt}), decimal_column(50, {1, -2}),
             ext(prim<int32_t>(PType::i32, {1, std::nullopt}), tk[2]),
             ext(prim<int64_t>(PType::i64, {1700000000000000, 0}), tk[3]),
             ext(prim<int64_t>(PType::i64, {5, std::nullopt}), tk[4]),
             prim<uint16_t>(PType::f16, {0x3c00, std::nullopt}), strs({"bin", ""}, true)},
            2);
  std::vector<std::pair<std::string, std::string>> out;
  const char* names[] = {"flat", "nested", "typed"};
  const ColumnPtr batches[] = {flat, nested, typed};
  for (uint8_t k = 0; k < 3; ++k) {
    for (const StringLayout layout : {StringLayout::offsets, StringLayout::views}) {
      const bool views = layout == StringLayout::views;
      const ColumnPtr b = batches[k];
      const std::string stream =
          stream_of(writer_of(dtypes[k], layout), {b, format::slice(b, 1, 1)});
      out.emplace_back(std::string(names[k]) + (views ? "_views" : "_offsets"),
                       std::string(1, static_cast<char>(k | (views ? 0x80 : 0))) + stream);
    }
  }
  // A zstd-compressed stream of the flat dtype, long enough that some buffers compress and
  // others stay raw; tests/interop/test_arrow_ipc.py reads it with pyarrow, row by row.
  std::vector<std::optional<int64_t>> iv;
  std::vector<OS> sv;
  std::vector<std::optional<bool>> fv;
  std::vector<std::optional<double>> dv;
  for (int i = 0; i < 200; ++i) {
    iv.push_back(i % 7 == 0 ? std::nullopt : std::optional<int64_t>(i * 3));
    sv.push_back(i % 5 == 0 ? OS() : OS("value " + std::to_string(i % 4)));
    fv.push_back(i % 3 == 0 ? std::nullopt : std::optional<bool>(i % 2 == 0));
    dv.push_back(i / 2.0);
  }
  const ColumnPtr long_flat = named(0,
                                    {prim<int64_t>(PType::i64, iv), strs(sv), bools(fv),
                                     prim<double>(PType::f64, dv), nulls(200)},
                                    200);
  const auto zstd = ArrowIpcWriter::make(
      dtypes[0], ArrowIpcOptions{.compression = format::IpcCompression::zstd, .zstd_level = 1});
  REQUIRE(zstd.ok());
  out.emplace_back(
      "flat_offsets_zstd",
      std::string(1, '\0') + stream_of(*zstd, {long_flat, format::slice(long_flat, 1, 1)}));
  return out;
}

}  // namespace

TEST_CASE("the fuzz seeds are the writer's streams and read through the fuzz entry",
          "[format][arrow_ipc_read]") {
  for (const auto& [name, bytes] : fuzz_seeds()) {
    INFO(name);
    const std::string path = source_path("tests/fuzz/seeds/arrow_ipc_read/" + name);
    REQUIRE(std::filesystem::exists(path));
    CHECK(slurp(path) == bytes);  // rerun the hidden case below when the writer changes
    const auto* p = reinterpret_cast<const uint8_t*>(bytes.data());
    const auto r = format::fuzz_read_arrow_ipc({p, bytes.size()});
    if (!r.ok()) FAIL(r.error().to_string());
    // The wrong layout is refused, not crashed on.
    std::string other = bytes;
    other[0] = static_cast<char>(other[0] ^ 0x80);
    CHECK(
        !format::fuzz_read_arrow_ipc({reinterpret_cast<const uint8_t*>(other.data()), other.size()})
             .ok());
  }
  CHECK(!format::fuzz_read_arrow_ipc({}).ok());
}

TEST_CASE("write the fuzz seeds (run by hand after a writer change)", "[.arrow_ipc_read_seeds]") {
  const std::filesystem::path dir = source_path("tests/fuzz/seeds/arrow_ipc_read");
  std::filesystem::create_directories(dir);
  for (const auto& [name, bytes] : fuzz_seeds()) {
    std::ofstream out(dir / name, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    REQUIRE(out.good());
  }
}

TEST_CASE("field nodes at a 4-byte boundary are read byte-wise (fuzz finding)",
          "[format][arrow_ipc_read]") {
  // The fuzz target's input (flat dtype, views) whose RecordBatch.nodes vector the verifier
  // accepts at an address 4 mod 8: reading its i64 fields through the generated accessors was a
  // misaligned load (UBSan). A node of it claims more rows than any bound allows.
  const std::string bytes =
      slurp(source_path("tests/format/golden/arrow_ipc/unaligned_field_nodes.bin"));
  const auto r =
      format::fuzz_read_arrow_ipc({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()});
  REQUIRE(!r.ok());
  CHECK((r.error().code() == Errc::corrupt || r.error().code() == Errc::out_of_memory));
}

// ---- zstd bodies --------------------------------------------------------------------------------

namespace {

ArrowIpcWriter zstd_writer_of(const DTypePtr& t, StringLayout strings = StringLayout::offsets) {
  auto w = ArrowIpcWriter::make(
      t, ArrowIpcOptions{.strings = strings, .compression = format::IpcCompression::zstd});
  REQUIRE(w.ok());
  return std::move(w).value();
}

// One zstd frame of @p raw; with @p content_size false the frame header leaves the size out.
std::string zstd_frame(const std::string& raw, bool content_size = true) {
  ZSTD_CCtx* c = ZSTD_createCCtx();
  REQUIRE(c != nullptr);
  ZSTD_CCtx_setParameter(c, ZSTD_c_contentSizeFlag, content_size ? 1 : 0);
  std::string out(ZSTD_compressBound(raw.size()), '\0');
  const size_t n = ZSTD_compress2(c, out.data(), out.size(), raw.data(), raw.size());
  ZSTD_freeCCtx(c);
  REQUIRE(!ZSTD_isError(n));
  out.resize(n);
  return out;
}

std::string prefixed(int64_t prefix, const std::string& rest) {
  std::string out(8, '\0');
  std::memcpy(out.data(), &prefix, 8);
  return out + rest;
}

// @p h with @p buffers laid out in its body at 8-aligned offsets, zero padded.
void lay_out(HandBatch& h, const std::vector<std::string>& buffers) {
  h.body.clear();
  h.buffers.clear();
  for (const std::string& b : buffers) {
    h.buffers.emplace_back(static_cast<int64_t>(h.body.size()), static_cast<int64_t>(b.size()));
    h.body += b;
    h.body.resize((h.body.size() + 7) / 8 * 8, '\0');
  }
}

}  // namespace

TEST_CASE("zstd-compressed streams of every type read back equal", "[format][arrow_ipc_read]") {
  const StringLayout layout = GENERATE(StringLayout::offsets, StringLayout::views);
  INFO("views: " << (layout == StringLayout::views));
  const ColumnPtr b = every_type(300);
  const std::vector<ColumnPtr> batches = {b,
                                          format::slice(b, 3, 5),
                                          format::slice(b, 7, 1),
                                          format::slice(b, 2, 0),
                                          format::slice(b, 9, 250),
                                          with_dtype(every_type(0), b->dtype)};
  const std::string compressed = stream_of(zstd_writer_of(b->dtype, layout), batches);
  const std::string plain = stream_of(writer_of(b->dtype, layout), batches);
  CHECK(compressed.size() < plain.size());
  const auto got = read_ok(compressed, b->dtype, layout);
  REQUIRE(got.size() == batches.size());
  for (size_t i = 0; i < batches.size(); ++i) {
    INFO("batch " << i);
    require_same(got[i], batches[i]);
  }
}

TEST_CASE("decompressed bytes count once against max_decoded_bytes", "[format][arrow_ipc_read]") {
  // The bounds of "the decode bound and the depth bound", compressed: the same two batches
  // (8000 bytes of values and 2000 rows each) need the same budget.
  std::vector<std::optional<int64_t>> v(1000, 7);
  const ColumnPtr b = batch_of({prim<int64_t>(PType::i64, v)}, 1000);
  const std::string bytes = stream_of(zstd_writer_of(b->dtype), {b, b});
  CHECK(bytes.size() < 2'000);  // the values (16000 bytes in all) did compress
  ArrowIpcReadOptions o;
  o.max_decoded_bytes = 12'000;
  require_error(format::read_arrow_ipc_stream(buffer_from(bytes), b->dtype, o), Errc::out_of_memory,
                "max_decoded_bytes");
  o.max_decoded_bytes = 20'000;
  CHECK(format::read_arrow_ipc_stream(buffer_from(bytes), b->dtype, o).ok());
}

TEST_CASE("pyarrow's zstd-compressed stream reads as its uncompressed one",
          "[format][arrow_ipc_read]") {
  // make_arrow_ipc_golden.py writes the same table both ways; the columns must be equal.
  const std::string plain =
      slurp(source_path("tests/format/golden/arrow_ipc/pyarrow_offsets.arrows"));
  const std::string zstd =
      slurp(source_path("tests/format/golden/arrow_ipc/pyarrow_offsets_zstd.arrows"));
  const std::string big =
      slurp(source_path("tests/format/golden/arrow_ipc/pyarrow_zstd_big.arrows"));
  // The dtype of offsets_table(), as "pyarrow's streams read as the same columns" has it.
  using nested_golden::make_temporal;
  auto pair = fixed_list_of(prim<float>(PType::f32, {1, 2}), 2);
  auto st =
      nullable_struct({"a", "b"}, {prim<int32_t>(PType::i32, {1}), strs({std::nullopt})}, {false});
  std::vector<DTypePtr> types = {
      DType::make_primitive(PType::i64, true),
      DType::make_primitive(PType::u8, false),
      DType::make_primitive(PType::f64, false),
      DType::make_bool(true),
      DType::make_utf8(true),
      DType::make_binary(false),
      DType::make_null(),
      decimal_column(10, {std::nullopt})->dtype,
      make_temporal("vortex.date", format::TimeUnit::days, PType::i32, false),
      make_temporal("vortex.timestamp", format::TimeUnit::us, PType::i64, false, "UTC"),
      list_of(prim<int32_t>(PType::i32, {1}), {0, 1})->dtype,
      pair->dtype,
      st->dtype};
  const auto t = DType::make_struct(
      {"i64", "u8", "f64", "flag", "s", "bin", "nothing", "dec", "day", "ts", "tags", "pair", "st"},
      types, false);
  const auto want = read_ok(plain, t);
  const auto got = read_ok(zstd, t);
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) require_same(got[i], want[i]);
  // 4000 rows of i64 i % 100 and utf8 "row {i % 10}": pyarrow compressed these buffers.
  const auto bt = DType::make_struct(
      {"k", "s"}, {DType::make_primitive(PType::i64, false), DType::make_utf8(false)}, false);
  const auto rows = read_ok(big, bt);
  uint64_t n = 0;
  for (const ColumnPtr& r : rows) {
    const auto& k = *r->children[0];
    const auto& s = *r->children[1];
    for (uint64_t i = 0; i < r->length; ++i, ++n) {
      REQUIRE(k.buffers[0].as<int64_t>()[i] == static_cast<int64_t>(n % 100));
      const int32_t* o = s.offsets();
      const std::string got_s(reinterpret_cast<const char*>(s.buffers[1].data()) + o[i],
                              static_cast<size_t>(o[i + 1] - o[i]));
      REQUIRE(got_s == "row " + std::to_string(n % 10));
    }
  }
  CHECK(n == 4000);
  CHECK(big.size() < 4000 * 8);  // the i64 column alone is 32000 bytes uncompressed
}

TEST_CASE("hostile length prefixes and zstd frames are corrupt or past the budget",
          "[format][arrow_ipc_read]") {
  const auto t = DType::make_struct({"v"}, {DType::make_primitive(PType::i32, true)}, false);
  const std::string schema = writer_of(t).schema_message().to_string();
  const std::string values = raw(std::vector<int32_t>{5, 0});  // 8 bytes
  const std::string validity("\x01", 1);
  // @p values_buffer as the second buffer of a 2-row batch with one null.
  auto batch = [&](const std::string& values_buffer, uint64_t max_decoded = 1 << 20) {
    HandBatch h;
    h.length = 2;
    h.nodes = {afb::FieldNode(2, 1)};
    h.codec = afb::CompressionType::ZSTD;
    lay_out(h, {prefixed(-1, validity), values_buffer});
    return format::read_arrow_ipc_stream(buffer_from(schema + hand_batch(h) + kEnd), t,
                                         ArrowIpcReadOptions{.max_decoded_bytes = max_decoded});
  };
  const auto ok = batch(prefixed(8, zstd_frame(values)));
  if (!ok.ok()) FAIL(ok.error().to_string());
  CHECK(ok->at(0)->children[0]->buffers[0].as<int32_t>()[0] == 5);
  CHECK(batch(prefixed(-1, values)).ok());
  CHECK(batch(prefixed(8, zstd_frame(values, /*content_size=*/false))).ok());

  // Prefixes: missing, negative other than -1, not the frame's size either way.
  require_error(batch(std::string("\x08\0\0\0", 4)), Errc::corrupt, "length prefix");
  require_error(batch(prefixed(-2, zstd_frame(values))), Errc::corrupt, "length -2");
  require_error(batch(prefixed(INT64_MIN, zstd_frame(values))), Errc::corrupt, "length");
  require_error(batch(prefixed(4, zstd_frame(values))), Errc::corrupt, "behind a length of 4");
  require_error(batch(prefixed(16, zstd_frame(values))), Errc::corrupt, "behind a length of 16");
  // The same without a content size in the frame header: the bounded decompression finds it.
  require_error(batch(prefixed(4, zstd_frame(values, false))), Errc::corrupt, "fails");
  require_error(batch(prefixed(16, zstd_frame(values, false))), Errc::corrupt,
                "8 bytes behind a length of 16");
  // Not a frame, a cut frame, a frame with bytes after it.
  require_error(batch(prefixed(8, std::string(16, '\xAB'))), Errc::corrupt, "zstd");
  const std::string frame = zstd_frame(values);
  require_error(batch(prefixed(8, frame.substr(0, frame.size() - 2))), Errc::corrupt, "zstd");
  require_error(batch(prefixed(8, frame + "junk")), Errc::corrupt, "zstd");
  // -1 with fewer raw bytes than the rows need: checked as an uncompressed buffer.
  require_error(batch(prefixed(-1, values.substr(0, 4))), Errc::corrupt, "4 bytes");
  // A prefix past the budget is refused before anything is allocated, whatever the frame says.
  require_error(batch(prefixed(int64_t{1} << 60, frame)), Errc::out_of_memory, "max_decoded_bytes");
  require_error(batch(prefixed(INT64_MAX, frame)), Errc::out_of_memory, "max_decoded_bytes");
  const std::string big(1 << 16, 'x');
  require_error(batch(prefixed(1 << 16, zstd_frame(big)), 1 << 15), Errc::out_of_memory,
                "max_decoded_bytes");
  // A prefix within the budget that the frame's bytes cannot inflate to (zstd_max_inflated):
  // refused before its bytes are reserved, whether or not the frame declares its size.
  require_error(batch(prefixed(int64_t{1} << 32, frame), uint64_t{1} << 40), Errc::corrupt,
                "cannot inflate to its length 4294967296");
  require_error(batch(prefixed(int64_t{1} << 32, zstd_frame(values, false)), uint64_t{1} << 40),
                Errc::corrupt, "cannot inflate");
  // A frame whose header claims more than its prefix (a bomb behind a small prefix).
  require_error(batch(prefixed(8, zstd_frame(big))), Errc::corrupt, "behind a length of 8");
  require_error(batch(prefixed(8, zstd_frame(big, false))), Errc::corrupt, "fails");
  // Other codecs and methods.
  HandBatch h;
  h.length = 2;
  h.nodes = {afb::FieldNode(2, 1)};
  lay_out(h, {prefixed(-1, validity), prefixed(-1, values)});
  h.codec = afb::CompressionType::LZ4_FRAME;
  require_error(read(schema + hand_batch(h) + kEnd, t), Errc::unsupported, "only ZSTD");
  h.codec = static_cast<afb::CompressionType>(7);
  require_error(read(schema + hand_batch(h) + kEnd, t), Errc::unsupported, "only ZSTD");
  h.codec = afb::CompressionType::ZSTD;
  h.method = static_cast<afb::BodyCompressionMethod>(1);
  require_error(read(schema + hand_batch(h) + kEnd, t), Errc::unsupported, "BUFFER");
}
