// SPDX-License-Identifier: Apache-2.0
// The Arrow IPC stream writer (format/arrow_ipc.hpp), byte by byte: framing (continuation
// marker, metadata and body lengths, end marker), the flatbuffer metadata read back through
// our own schema, 8-aligned buffers inside the body, exact null counts, and the edges: no rows,
// no columns, all-null and null-typed columns, slices off a byte boundary (shifted bitmaps,
// rebased offsets, cut children), views written as views or as offsets, zstd bodies (each buffer
// unpacked equal to the plain writer's, raw behind -1 where zstd cannot shrink it), and bad input.
// pyarrow's reading of whole corpus files is tests/interop/test_arrow_ipc.py.
#include <zstd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "format/arrow_ipc.hpp"
#include "format/fbs/arrow_ipc_generated.h"
#include "format/string_views.hpp"
#include "tests/format/arrow_ipc_fixtures.hpp"
#include "tests/format/fixtures.hpp"
#include "tests/format/nested_golden.hpp"

using namespace oc;
using namespace oc::test;
using format::ArrowIpcOptions;
using format::ArrowIpcWriter;
using format::Column;
using format::IpcMessage;
using format::StringLayout;
using format::TypeKind;
namespace afb = oc::arrow_fb;

namespace {

// ---- reading the stream back
// ---------------------------------------------------------------------

struct Parsed {
  std::vector<uint64_t> words;  // the flatbuffer, 8-aligned for the verifier
  const afb::Message* msg = nullptr;
  std::string body;
};

uint32_t u32_at(const std::string& s, size_t at) {
  uint32_t v;
  std::memcpy(&v, s.data() + at, 4);
  return v;
}

// Checks one encapsulated message's framing and reads it back.
Parsed parse(const IpcMessage& m) {
  const std::string s = m.to_string();
  REQUIRE(s.size() == m.size());
  REQUIRE(s.size() >= 8);
  REQUIRE(u32_at(s, 0) == 0xFFFFFFFFu);
  const uint32_t meta = u32_at(s, 4);
  REQUIRE(meta > 0);
  REQUIRE((8 + meta) % 8 == 0);
  REQUIRE(m.metadata.size() == 8 + meta);
  REQUIRE(m.body_length % 8 == 0);
  REQUIRE(s.size() == 8 + meta + m.body_length);
  Parsed p;
  p.words.resize(meta / 8);
  std::memcpy(p.words.data(), s.data() + 8, meta);
  const auto* bytes = reinterpret_cast<const uint8_t*>(p.words.data());
  flatbuffers::Verifier v(bytes, meta);
  REQUIRE(afb::VerifyMessageBuffer(v));
  p.msg = afb::GetMessage(bytes);
  REQUIRE(p.msg->version() == afb::MetadataVersion::V5);
  REQUIRE(p.msg->body_length() == static_cast<int64_t>(m.body_length));
  p.body = s.substr(8 + meta);
  if (const auto* rb = p.msg->header_as_RecordBatch()) {
    REQUIRE(rb->nodes() != nullptr);
    REQUIRE(rb->buffers() != nullptr);
    int64_t end = 0;
    for (const auto* b : *rb->buffers()) {
      CHECK(b->offset() % 8 == 0);
      CHECK(b->offset() >= end);  // in order, never overlapping
      CHECK(b->offset() + b->length() <= static_cast<int64_t>(m.body_length));
      end = b->offset() + b->length();
    }
    // Padding between and after buffers is zeros.
    std::string mask(p.body.size(), 0);
    for (const auto* b : *rb->buffers()) {
      std::memset(mask.data() + b->offset(), 1, static_cast<size_t>(b->length()));
    }
    for (size_t i = 0; i < p.body.size(); ++i) {
      if (!mask[i]) REQUIRE(p.body[i] == 0);
    }
  }
  return p;
}

const afb::RecordBatch& batch(const Parsed& p) {
  REQUIRE(p.msg->header_type() == afb::MessageHeader::RecordBatch);
  return *p.msg->header_as_RecordBatch();
}

// Bytes of buffer @p i of a record batch message.
std::string buf(const Parsed& p, size_t i) {
  const auto& rb = batch(p);
  REQUIRE(i < rb.buffers()->size());
  const auto* b = rb.buffers()->Get(static_cast<flatbuffers::uoffset_t>(i));
  return p.body.substr(static_cast<size_t>(b->offset()), static_cast<size_t>(b->length()));
}

template <class T>
std::vector<T> as_vec(const std::string& bytes) {
  std::vector<T> out(bytes.size() / sizeof(T));
  if (!out.empty()) std::memcpy(out.data(), bytes.data(), out.size() * sizeof(T));
  return out;
}

std::pair<int64_t, int64_t> node(const Parsed& p, size_t i) {
  const auto& rb = batch(p);
  REQUIRE(i < rb.nodes()->size());
  const auto* n = rb.nodes()->Get(static_cast<flatbuffers::uoffset_t>(i));
  return {n->length(), n->null_count()};
}

IpcMessage message_of(const ArrowIpcWriter& w, const ColumnPtr& b) {
  auto m = w.batch_message(b);
  REQUIRE(m.ok());
  return std::move(m).value();
}

ArrowIpcWriter writer_for(const ColumnPtr& b, ArrowIpcOptions o = ArrowIpcOptions::defaults()) {
  auto w = ArrowIpcWriter::make(b->dtype, o);
  REQUIRE(w.ok());
  return std::move(w).value();
}

std::vector<bool> bits_of(const std::string& bytes, size_t n) {
  std::vector<bool> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = (static_cast<uint8_t>(bytes[i / 8]) >> (i % 8)) & 1;
  return out;
}

}  // namespace

TEST_CASE("the stream format's constants never change", "[format][arrow_ipc]") {
  STATIC_REQUIRE(format::arrow_ipc_forever::kContinuation == 0xFFFFFFFFu);
  STATIC_REQUIRE(format::arrow_ipc_forever::kAlignment == 8);
  STATIC_REQUIRE(format::arrow_ipc_forever::kMetadataV5 == 4);
  STATIC_REQUIRE(static_cast<int16_t>(afb::MetadataVersion::V5) == 4);
  STATIC_REQUIRE(static_cast<uint8_t>(afb::MessageHeader::Schema) == 1);
  STATIC_REQUIRE(static_cast<uint8_t>(afb::MessageHeader::RecordBatch) == 3);
  STATIC_REQUIRE(static_cast<uint8_t>(afb::Type::Int) == 2);
  STATIC_REQUIRE(static_cast<uint8_t>(afb::Type::Utf8) == 5);
  STATIC_REQUIRE(static_cast<uint8_t>(afb::Type::Timestamp) == 10);
  STATIC_REQUIRE(static_cast<uint8_t>(afb::Type::Struct_) == 13);
  STATIC_REQUIRE(static_cast<uint8_t>(afb::Type::FixedSizeList) == 16);
  STATIC_REQUIRE(static_cast<uint8_t>(afb::Type::Utf8View) == 24);
  STATIC_REQUIRE(sizeof(afb::FieldNode) == 16);
  STATIC_REQUIRE(sizeof(afb::Buffer) == 16);
  const IpcMessage eos = ArrowIpcWriter::end_of_stream();
  REQUIRE(eos.to_string() == std::string("\xFF\xFF\xFF\xFF\0\0\0\0", 8));
  REQUIRE(eos.body.empty());
}

TEST_CASE("the schema message maps every scan type", "[format][arrow_ipc]") {
  using format::TimeUnit;
  using nested_golden::make_temporal;
  auto dec = [](uint8_t p, int8_t s) {
    auto t = std::make_shared<DType>();
    t->kind = TypeKind::decimal;
    t->precision = p;
    t->scale = s;
    t->nullable = true;
    return DTypePtr(t);
  };
  auto list = std::make_shared<DType>();
  list->kind = TypeKind::list;
  list->children = {DType::make_utf8(true)};
  auto fsl = std::make_shared<DType>();
  fsl->kind = TypeKind::fixed_size_list;
  fsl->list_size = 3;
  fsl->children = {DType::make_primitive(PType::f32, false)};
  std::vector<DTypePtr> types = {
      DType::make_null(),
      DType::make_bool(true),
      DType::make_primitive(PType::u8, false),
      DType::make_primitive(PType::i64, true),
      DType::make_primitive(PType::f16, true),
      DType::make_primitive(PType::f64, false),
      dec(10, 2),
      dec(60, -3),
      make_temporal("vortex.date", TimeUnit::days, PType::i32, true),
      make_temporal("vortex.date", TimeUnit::ms, PType::i64, true),
      make_temporal("vortex.time", TimeUnit::s, PType::i32, true),
      make_temporal("vortex.time", TimeUnit::ns, PType::i64, true),
      make_temporal("vortex.timestamp", TimeUnit::us, PType::i64, true, "Europe/Berlin"),
      make_temporal("vortex.timestamp", TimeUnit::ms, PType::i64, false),
      DType::make_utf8(true),
      DType::make_binary(false),
      list,
      fsl,
      DType::make_struct({"x", "y"},
                         {DType::make_primitive(PType::i32, true), DType::make_utf8(false)}, true),
  };
  std::vector<std::string> names;
  for (size_t i = 0; i < types.size(); ++i) names.push_back("c" + std::to_string(i));
  auto schema = DType::make_struct(names, types, false);
  auto w = ArrowIpcWriter::make(schema);
  REQUIRE(w.ok());
  const IpcMessage m = w->schema_message();
  REQUIRE(m.body_length == 0);
  const Parsed p = parse(m);
  REQUIRE(p.msg->header_type() == afb::MessageHeader::Schema);
  const auto* s = p.msg->header_as_Schema();
  REQUIRE(s->endianness() == afb::Endianness::Little);
  REQUIRE(s->fields()->size() == types.size());
  auto field = [&](size_t i) { return s->fields()->Get(static_cast<flatbuffers::uoffset_t>(i)); };
  for (size_t i = 0; i < types.size(); ++i) {
    INFO(i);
    CHECK(field(i)->name()->str() == names[i]);
    CHECK(field(i)->nullable() == types[i]->nullable);
    CHECK(field(i)->children() != nullptr);  // present even for leaves
    CHECK(field(i)->type() != nullptr);
  }
  CHECK(field(0)->type_type() == afb::Type::Null);
  CHECK(field(1)->type_type() == afb::Type::Bool);
  CHECK(field(2)->type_as_Int()->bit_width() == 8);
  CHECK(!field(2)->type_as_Int()->is_signed());
  CHECK(field(3)->type_as_Int()->bit_width() == 64);
  CHECK(field(3)->type_as_Int()->is_signed());
  CHECK(field(4)->type_as_FloatingPoint()->precision() == afb::Precision::HALF);
  CHECK(field(5)->type_as_FloatingPoint()->precision() == afb::Precision::DOUBLE);
  CHECK(field(6)->type_as_Decimal()->precision() == 10);
  CHECK(field(6)->type_as_Decimal()->scale() == 2);
  CHECK(field(6)->type_as_Decimal()->bit_width() == 128);
  CHECK(field(7)->type_as_Decimal()->bit_width() == 256);
  CHECK(field(7)->type_as_Decimal()->scale() == -3);
  CHECK(field(8)->type_as_Date()->unit() == afb::DateUnit::DAY);
  CHECK(field(9)->type_as_Date()->unit() == afb::DateUnit::MILLISECOND);
  CHECK(field(10)->type_as_Time()->unit() == afb::TimeUnit::SECOND);
  CHECK(field(10)->type_as_Time()->bit_width() == 32);
  CHECK(field(11)->type_as_Time()->unit() == afb::TimeUnit::NANOSECOND);
  CHECK(field(11)->type_as_Time()->bit_width() == 64);
  CHECK(field(12)->type_as_Timestamp()->unit() == afb::TimeUnit::MICROSECOND);
  CHECK(field(12)->type_as_Timestamp()->timezone()->str() == "Europe/Berlin");
  CHECK(field(13)->type_as_Timestamp()->timezone() == nullptr);
  CHECK(field(14)->type_type() == afb::Type::Utf8);  // offsets by default, never views
  CHECK(field(15)->type_type() == afb::Type::Binary);
  CHECK(field(16)->type_type() == afb::Type::List);
  CHECK(field(16)->children()->Get(0)->name()->str() == "item");
  CHECK(field(16)->children()->Get(0)->type_type() == afb::Type::Utf8);
  CHECK(field(17)->type_as_FixedSizeList()->list_size() == 3);
  CHECK(field(17)->children()->Get(0)->type_type() == afb::Type::FloatingPoint);
  CHECK(field(18)->type_type() == afb::Type::Struct_);
  CHECK(field(18)->children()->size() == 2);
  CHECK(field(18)->children()->Get(1)->name()->str() == "y");

  // The default-valued scalars are on the wire all the same (ForceDefaults): a reader whose
  // schema had another default still reads DAY, SECOND, 32 and 128.
  auto has = [](const void* table, flatbuffers::voffset_t slot) {
    return static_cast<const flatbuffers::Table*>(table)->CheckField(slot);
  };
  CHECK(has(field(8)->type_as_Date(), afb::Date::VT_UNIT));
  CHECK(has(field(6)->type_as_Decimal(), afb::Decimal::VT_BIT_WIDTH));
  CHECK(has(field(10)->type_as_Time(), afb::Time::VT_BIT_WIDTH));
  CHECK(has(field(10)->type_as_Time(), afb::Time::VT_UNIT));
  CHECK(has(p.msg, afb::Message::VT_VERSION));

  SECTION("views when asked") {
    ArrowIpcOptions o;
    o.strings = StringLayout::views;
    auto wv = ArrowIpcWriter::make(schema, o);
    REQUIRE(wv.ok());
    const Parsed pv = parse(wv->schema_message());
    const auto* f = pv.msg->header_as_Schema()->fields();
    CHECK(f->Get(14)->type_type() == afb::Type::Utf8View);
    CHECK(f->Get(15)->type_type() == afb::Type::BinaryView);
    CHECK(f->Get(16)->children()->Get(0)->type_type() == afb::Type::Utf8View);
  }
}

TEST_CASE("a batch of ints and strings with nulls, byte by byte", "[format][arrow_ipc]") {
  auto i = prim<int64_t>(PType::i64, {1, std::nullopt, 3, 4, std::nullopt});
  auto s = strs({"a", "bcd", std::nullopt, "", "efgh"});
  auto b = batch_of({i, s}, 5);
  const auto w = writer_for(b);
  const Parsed p = parse(message_of(w, b));
  const auto& rb = batch(p);
  REQUIRE(rb.length() == 5);
  REQUIRE(rb.nodes()->size() == 2);
  REQUIRE(rb.buffers()->size() == 5);
  REQUIRE(rb.variadic_buffer_counts() == nullptr);
  CHECK(node(p, 0) == std::pair<int64_t, int64_t>{5, 2});
  CHECK(node(p, 1) == std::pair<int64_t, int64_t>{5, 1});
  CHECK(bits_of(buf(p, 0), 5) == std::vector<bool>{true, false, true, true, false});
  CHECK(as_vec<int64_t>(buf(p, 1)).size() == 5);
  CHECK(as_vec<int64_t>(buf(p, 1))[3] == 4);
  CHECK(bits_of(buf(p, 2), 5) == std::vector<bool>{true, true, false, true, true});
  CHECK(as_vec<int32_t>(buf(p, 3)) == std::vector<int32_t>{0, 1, 4, 4, 4, 8});
  CHECK(buf(p, 4) == "abcdefgh");
}

TEST_CASE("columns without nulls write an empty validity entry", "[format][arrow_ipc]") {
  auto i = prim<int32_t>(PType::i32, {1, 2, 3});
  auto b = batch_of({i}, 3);
  const Parsed p = parse(message_of(writer_for(b), b));
  REQUIRE(batch(p).buffers()->size() == 2);
  CHECK(batch(p).buffers()->Get(0)->length() == 0);
  CHECK(node(p, 0).second == 0);
  CHECK(as_vec<int32_t>(buf(p, 1)) == std::vector<int32_t>{1, 2, 3});
  CHECK(p.body.size() == 16);  // 12 bytes of values padded to 16
}

TEST_CASE("slices off a byte boundary are written from row 0", "[format][arrow_ipc]") {
  std::vector<std::optional<int16_t>> vals;
  std::vector<std::optional<std::string>> words;
  for (int k = 0; k < 40; ++k) {
    vals.push_back(k % 3 == 0 ? std::nullopt : std::optional<int16_t>(static_cast<int16_t>(k)));
    words.push_back(k % 4 == 1 ? std::nullopt
                               : std::optional<std::string>(std::string(k % 5, 'a' + k % 26)));
  }
  std::vector<bool> flags;
  for (int k = 0; k < 40; ++k) flags.push_back(k % 7 < 3);
  auto decoded = decode(bool_node(flags), DType::make_bool(false), 40);
  REQUIRE(decoded.ok());
  const ColumnPtr flag = *decoded;
  // list<i32>: row k holds k % 3 elements
  std::vector<int32_t> offs{0};
  std::vector<std::optional<int32_t>> elems;
  for (int k = 0; k < 40; ++k) {
    for (int e = 0; e < k % 3; ++e) elems.push_back(k * 10 + e);
    offs.push_back(static_cast<int32_t>(elems.size()));
  }
  auto list = list_of(prim<int32_t>(PType::i32, elems), offs);
  auto b = batch_of({prim<int16_t>(PType::i16, vals), strs(words), flag, list}, 40);
  const uint64_t begin = GENERATE(0u, 3u, 8u, 13u, 39u);
  const uint64_t len = GENERATE(0u, 1u, 27u);
  if (begin + len > 40) return;
  const ColumnPtr sliced = format::slice(b, begin, len);
  const Parsed p = parse(message_of(writer_for(b), sliced));
  const auto& rb = batch(p);
  REQUIRE(rb.length() == static_cast<int64_t>(len));
  REQUIRE(rb.nodes()->size() == 5);     // i16, utf8, bool, list, item
  REQUIRE(rb.buffers()->size() == 11);  // i16 2, utf8 3, bool 2, list 2, item 2
  int64_t nulls16 = 0, nulls_str = 0;
  for (uint64_t k = begin; k < begin + len; ++k) {
    nulls16 += k % 3 == 0;
    nulls_str += k % 4 == 1;
  }
  CHECK(node(p, 0) == std::pair<int64_t, int64_t>{static_cast<int64_t>(len), nulls16});
  CHECK(node(p, 1) == std::pair<int64_t, int64_t>{static_cast<int64_t>(len), nulls_str});
  // i16: validity and values
  if (nulls16 > 0) {
    const auto v = bits_of(buf(p, 0), len);
    for (uint64_t k = 0; k < len; ++k) CHECK(v[k] == ((begin + k) % 3 != 0));
  }
  const auto v16 = as_vec<int16_t>(buf(p, 1));
  REQUIRE(v16.size() == len);
  for (uint64_t k = 0; k < len; ++k) {
    if ((begin + k) % 3 != 0) CHECK(v16[k] == static_cast<int16_t>(begin + k));
  }
  // utf8: offsets from 0, the bytes of exactly these rows
  const auto o = as_vec<int32_t>(buf(p, 3));
  REQUIRE(o.size() == len + 1);
  CHECK(o[0] == 0);
  std::string expect;
  for (uint64_t k = begin; k < begin + len; ++k) {
    if (words[k]) expect += *words[k];
    CHECK(o[k - begin + 1] == static_cast<int32_t>(expect.size()));
  }
  CHECK(buf(p, 4) == expect);
  // bool: no nulls, values shifted to bit 0
  CHECK(buf(p, 5).empty());
  const auto fb = bits_of(buf(p, 6), len);
  for (uint64_t k = 0; k < len; ++k) CHECK(fb[k] == flags[begin + k]);
  // list: offsets rebased, elements cut to the rows these reach
  const auto lo = as_vec<int32_t>(buf(p, 8));
  REQUIRE(lo.size() == len + 1);
  CHECK(lo[0] == 0);
  std::vector<int32_t> expect_items;
  for (uint64_t k = begin; k < begin + len; ++k) {
    for (uint64_t e = 0; e < k % 3; ++e) expect_items.push_back(static_cast<int32_t>(k * 10 + e));
  }
  CHECK(lo.back() == static_cast<int32_t>(expect_items.size()));
  CHECK(node(p, 4).first == static_cast<int64_t>(expect_items.size()));
  CHECK(as_vec<int32_t>(buf(p, 10)) == expect_items);
}

TEST_CASE("a batch of no rows has empty buffers and one zero offset", "[format][arrow_ipc]") {
  auto b = batch_of(
      {prim<int64_t>(PType::i64, {}), strs({}), list_of(prim<int32_t>(PType::i32, {}), {0})}, 0);
  const Parsed p = parse(message_of(writer_for(b), b));
  const auto& rb = batch(p);
  CHECK(rb.length() == 0);
  REQUIRE(rb.nodes()->size() == 4);
  for (size_t i = 0; i < 4; ++i) CHECK(node(p, i) == std::pair<int64_t, int64_t>{0, 0});
  CHECK(buf(p, 1).empty());
  CHECK(as_vec<int32_t>(buf(p, 3)) == std::vector<int32_t>{0});
  CHECK(buf(p, 4).empty());
  CHECK(as_vec<int32_t>(buf(p, 6)) == std::vector<int32_t>{0});
}

TEST_CASE("a batch with no columns is a length and nothing else", "[format][arrow_ipc]") {
  auto b = batch_of({}, 7);
  const auto w = writer_for(b);
  const Parsed s = parse(w.schema_message());
  REQUIRE(s.msg->header_as_Schema()->fields() != nullptr);  // present though empty
  CHECK(s.msg->header_as_Schema()->fields()->size() == 0);
  const IpcMessage m = message_of(w, b);
  CHECK(m.body_length == 0);
  const Parsed p = parse(m);
  CHECK(batch(p).length() == 7);
  CHECK(batch(p).nodes()->size() == 0);
  CHECK(batch(p).buffers()->size() == 0);
}

TEST_CASE("all-null and null-typed columns", "[format][arrow_ipc]") {
  auto all_null = format::make_all_null(DType::make_utf8(true), 11);
  REQUIRE(all_null.ok());
  auto nulls = format::make_all_null(DType::make_null(), 11);
  REQUIRE(nulls.ok());
  auto ints = format::make_all_null(DType::make_primitive(PType::u32, true), 11);
  REQUIRE(ints.ok());
  auto b = batch_of({*all_null, *nulls, *ints}, 11);
  const uint64_t begin = GENERATE(0u, 5u);
  const Parsed p = parse(message_of(writer_for(b), format::slice(b, begin, 11 - begin)));
  const int64_t n = static_cast<int64_t>(11 - begin);
  REQUIRE(batch(p).nodes()->size() == 3);
  REQUIRE(batch(p).buffers()->size() == 5);  // utf8: 3, null: none, u32: 2
  CHECK(node(p, 0) == std::pair<int64_t, int64_t>{n, n});
  CHECK(node(p, 1) == std::pair<int64_t, int64_t>{n, n});
  CHECK(node(p, 2) == std::pair<int64_t, int64_t>{n, n});
  for (bool bit : bits_of(buf(p, 0), static_cast<size_t>(n))) CHECK(!bit);
  CHECK(as_vec<int32_t>(buf(p, 1)) == std::vector<int32_t>(static_cast<size_t>(n) + 1, 0));
  CHECK(as_vec<uint32_t>(buf(p, 4)).size() == static_cast<size_t>(n));
}

TEST_CASE("structs and fixed-size lists cut their children to the parent's rows",
          "[format][arrow_ipc]") {
  auto x = prim<int32_t>(PType::i32, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  auto y = strs({"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"});
  auto inner = std::make_shared<Column>();
  inner->dtype = DType::make_struct({"x", "y"}, {x->dtype, y->dtype}, true);
  inner->length = 10;
  inner->validity = format::make_bitmap(10, true);
  format::bitmap_set(inner->validity.mutable_data(), 4, false);
  inner->null_count = 1;
  inner->children = {x, y};
  std::vector<std::optional<float>> fl;
  for (int k = 0; k < 30; ++k) fl.push_back(static_cast<float>(k));
  auto fsl = fixed_list_of(prim<float>(PType::f32, fl), 3);
  auto b = batch_of({inner, fsl}, 10);
  const Parsed p = parse(message_of(writer_for(b), format::slice(b, 3, 5)));
  REQUIRE(batch(p).nodes()->size() == 5);  // struct, x, y, fixed list, item
  CHECK(node(p, 0) == std::pair<int64_t, int64_t>{5, 1});
  CHECK(bits_of(buf(p, 0), 5) == std::vector<bool>{true, false, true, true, true});
  CHECK(as_vec<int32_t>(buf(p, 2)) == std::vector<int32_t>{3, 4, 5, 6, 7});
  CHECK(buf(p, 5) == "defgh");
  CHECK(node(p, 3) == std::pair<int64_t, int64_t>{5, 0});
  CHECK(node(p, 4) == std::pair<int64_t, int64_t>{15, 0});
  const auto items = as_vec<float>(buf(p, 8));
  REQUIRE(items.size() == 15);
  CHECK(items.front() == 9.0f);
  CHECK(items.back() == 23.0f);
}

TEST_CASE("views are written as views with their variadic counts, or as offsets",
          "[format][arrow_ipc]") {
  auto s = strs(
      {"short", std::nullopt, "a value longer than twelve bytes", "x", "another long one here"});
  auto views = format::with_string_layout(s, StringLayout::views);
  REQUIRE(views.ok());
  REQUIRE((*views)->string_views);
  auto b = batch_of({*views}, 5);
  const auto sliced = format::slice(b, 1, 4);

  SECTION("as views") {
    ArrowIpcOptions o;
    o.strings = StringLayout::views;
    const Parsed p = parse(message_of(writer_for(b, o), sliced));
    const auto& rb = batch(p);
    REQUIRE(rb.variadic_buffer_counts() != nullptr);
    REQUIRE(rb.variadic_buffer_counts()->size() == 1);
    const auto k = rb.variadic_buffer_counts()->Get(0);
    REQUIRE(rb.buffers()->size() == 2 + static_cast<size_t>(k));
    CHECK(node(p, 0) == std::pair<int64_t, int64_t>{4, 1});
    const std::string v = buf(p, 1);
    REQUIRE(v.size() == 4 * format::kViewBytes);
    CHECK(v.substr(0, 16) == std::string(16, '\0'));  // the null row's view is all zeros
    int32_t size, index, offset;
    std::memcpy(&size, v.data() + 16, 4);
    std::memcpy(&index, v.data() + 24, 4);
    std::memcpy(&offset, v.data() + 28, 4);
    REQUIRE(size == 32);
    REQUIRE(index < k);
    CHECK(buf(p, 2 + static_cast<size_t>(index)).substr(static_cast<size_t>(offset), 32) ==
          "a value longer than twelve bytes");
  }
  SECTION("as offsets (the default)") {
    const Parsed p = parse(message_of(writer_for(b), sliced));
    CHECK(batch(p).variadic_buffer_counts() == nullptr);
    CHECK(as_vec<int32_t>(buf(p, 1)) == std::vector<int32_t>{0, 0, 32, 33, 54});
    CHECK(buf(p, 2) == "a value longer than twelve bytesxanother long one here");
  }
}

TEST_CASE("f16, decimal256 and temporal columns keep their widths", "[format][arrow_ipc]") {
  using nested_golden::make_temporal;
  auto half = prim<uint16_t>(PType::f16, {0x3c00, 0xc000});
  auto d = std::make_shared<Column>();
  auto dt = std::make_shared<DType>();
  dt->kind = TypeKind::decimal;
  dt->precision = 50;
  d->dtype = dt;
  d->length = 2;
  std::vector<uint8_t> dbytes(64, 0);
  dbytes[0] = 7;
  dbytes[32] = 9;
  d->buffers = {buffer_of(dbytes)};
  auto ts =
      with_dtype(prim<int64_t>(PType::i64, {1, 2}),
                 make_temporal("vortex.timestamp", format::TimeUnit::ns, PType::i64, false, "UTC"));
  auto b = batch_of({half, d, ts}, 2);
  const Parsed p = parse(message_of(writer_for(b), format::slice(b, 1, 1)));
  CHECK(as_vec<uint16_t>(buf(p, 1)) == std::vector<uint16_t>{0xc000});
  REQUIRE(buf(p, 3).size() == 32);
  CHECK(buf(p, 3)[0] == 9);
  CHECK(as_vec<int64_t>(buf(p, 5)) == std::vector<int64_t>{2});
}

TEST_CASE("bad schemas and batches are errors, never crashes", "[format][arrow_ipc]") {
  CHECK(ArrowIpcWriter::make(DType::make_utf8(false)).error().code() == Errc::invalid);
  CHECK(ArrowIpcWriter::make(nullptr).error().code() == Errc::invalid);
  auto variant = std::make_shared<DType>();
  variant->kind = TypeKind::variant;
  CHECK(ArrowIpcWriter::make(DType::make_struct({"v"}, {variant}, false)).error().code() ==
        Errc::unsupported);

  auto b = batch_of({prim<int32_t>(PType::i32, {1, 2, 3})}, 3);
  const auto w = writer_for(b);
  auto other = batch_of({strs({"a"})}, 1);
  CHECK(w.batch_message(other).error().code() == Errc::invalid);
  CHECK(w.batch_message(nullptr).error().code() == Errc::invalid);

  // Buffers too short for the rows they claim.
  auto short_values = std::make_shared<Column>(*b->children[0]);
  short_values->length = 1000;
  CHECK(w.batch_message(batch_of({short_values}, 1000)).error().code() == Errc::invalid);
  auto bad_offsets = std::make_shared<Column>(*strs({"abc", "de"}));
  bad_offsets->buffers[0] = buffer_of(std::vector<int32_t>{0, 3, 99});
  const auto ws = writer_for(batch_of({bad_offsets}, 2));
  CHECK(ws.batch_message(batch_of({bad_offsets}, 2)).error().code() == Errc::invalid);
  // Top-level nulls have no place in a record batch.
  auto nulled = std::make_shared<Column>(*b);
  nulled->validity = format::make_bitmap(3, false);
  nulled->null_count = 3;
  CHECK(w.batch_message(nulled).error().code() == Errc::invalid);
}

TEST_CASE("nothing under a null row is written as the batch holds it", "[format][arrow_ipc]") {
  // Every column holds non-zero garbage under its null rows, as decoders may leave it.
  auto ints = prim<int64_t>(PType::i64, {1, std::nullopt, 3, std::nullopt});
  auto ints_garbage = std::make_shared<Column>(*ints);
  ints_garbage->buffers = {buffer_of(std::vector<int64_t>{1, -1, 3, 0x0123456789abcdef})};
  auto flags =
      std::make_shared<Column>(*prim<int64_t>(PType::i64, {1, std::nullopt, 3, std::nullopt}));
  flags->dtype = DType::make_bool(true);
  flags->buffers = {buffer_of(std::vector<uint8_t>{0xFF})};
  auto words = std::make_shared<Column>(*strs({"ab", std::nullopt, "c", std::nullopt}));
  words->buffers = {buffer_of(std::vector<int32_t>{0, 2, 9, 10, 14}), bytes_of("abSECRET!cLEAK")};
  auto elems = prim<int32_t>(PType::i32, {10, 11, 99, 98, 97, 12});
  auto list = std::make_shared<Column>(*list_of(elems, {0, 2, 5, 6, 6}));
  auto list_t = std::make_shared<DType>(*list->dtype);
  list_t->nullable = true;
  list->dtype = list_t;
  list->validity = format::make_bitmap(4, true);
  format::bitmap_set(list->validity.mutable_data(), 1, false);
  list->null_count = 1;
  auto b = batch_of({ints_garbage, flags, words, list}, 4);
  const uint64_t begin = GENERATE(0u, 1u);
  const uint64_t n = 4 - begin;
  const Parsed p = parse(message_of(writer_for(b), format::slice(b, begin, n)));
  // i64: the null slots are zeros, the valid ones kept.
  const auto v = as_vec<int64_t>(buf(p, 1));
  const std::vector<int64_t> want_ints{1, 0, 3, 0};
  CHECK(v == std::vector<int64_t>(want_ints.begin() + static_cast<long>(begin), want_ints.end()));
  // bool: the bits of null rows are clear, and the bits past the rows too.
  const std::string fbits = buf(p, 3);
  REQUIRE(fbits.size() == 1);
  CHECK(static_cast<uint8_t>(fbits[0]) == (begin == 0 ? 0b0101 : 0b010));
  // utf8: null rows are empty, and their bytes are not written at all.
  const std::vector<int32_t> want_offs =
      begin == 0 ? std::vector<int32_t>{0, 2, 2, 3, 3} : std::vector<int32_t>{0, 0, 1, 1};
  CHECK(as_vec<int32_t>(buf(p, 5)) == want_offs);
  CHECK(buf(p, 6) == (begin == 0 ? "abc" : "c"));
  // list: the null row is empty, and the elements only it reached are gone.
  const std::vector<int32_t> want_list =
      begin == 0 ? std::vector<int32_t>{0, 2, 2, 3, 3} : std::vector<int32_t>{0, 0, 1, 1};
  CHECK(as_vec<int32_t>(buf(p, 8)) == want_list);
  CHECK(node(p, 4).first == (begin == 0 ? 3 : 1));
  const std::vector<int32_t> want_items =
      begin == 0 ? std::vector<int32_t>{10, 11, 12} : std::vector<int32_t>{12};
  CHECK(as_vec<int32_t>(buf(p, 10)) == want_items);
  CHECK(p.body.find("SECRET") == std::string::npos);
  CHECK(p.body.find("LEAK") == std::string::npos);
}

TEST_CASE("bool values past a slice's rows are not written", "[format][arrow_ipc]") {
  // Every bit set: the rows past the slice (nulls elsewhere, say) must not show in its last byte.
  auto flags = std::make_shared<Column>();
  flags->dtype = DType::make_bool(false);
  flags->length = 16;
  flags->buffers = {buffer_of(std::vector<uint8_t>{0xFF, 0xFF})};
  auto b = batch_of({flags}, 16);
  const uint64_t begin = GENERATE(0u, 8u, 3u);
  const uint64_t n = GENERATE(5u, 8u);
  const Parsed p = parse(message_of(writer_for(b), format::slice(b, begin, n)));
  const std::string v = buf(p, 1);
  REQUIRE(v.size() == 1);
  CHECK(static_cast<uint8_t>(v[0]) == static_cast<uint8_t>((1u << n) - 1));
}

TEST_CASE("a null row's view is written all zeros", "[format][arrow_ipc]") {
  auto s = strs({"kept", std::nullopt, "a value longer than twelve bytes"});
  auto views = format::with_string_layout(s, StringLayout::views);
  REQUIRE(views.ok());
  // Garbage in the null row's view (a writer outside onecopy's invariant).
  auto dirty = std::make_shared<Column>(**views);
  std::string vbytes(reinterpret_cast<const char*>(dirty->buffers[0].data()),
                     3 * format::kViewBytes);
  std::memcpy(vbytes.data() + format::kViewBytes, "\x05\0\0\0LEAKY\0\0\0\0\0\0\0", 16);
  dirty->buffers[0] = bytes_of(vbytes);
  ArrowIpcOptions o;
  o.strings = StringLayout::views;
  auto b = batch_of({dirty}, 3);
  const Parsed p = parse(message_of(writer_for(b, o), b));
  const std::string v = buf(p, 1);
  REQUIRE(v.size() == 3 * format::kViewBytes);
  CHECK(v.substr(format::kViewBytes, format::kViewBytes) == std::string(format::kViewBytes, '\0'));
  CHECK(v.substr(0, format::kViewBytes) == vbytes.substr(0, format::kViewBytes));
  CHECK(p.body.find("LEAKY") == std::string::npos);
}

TEST_CASE("columns without nulls are written without a copy", "[format][arrow_ipc]") {
  auto i = prim<int32_t>(PType::i32, {1, 2, 3});
  auto s = strs({"ab", "c", "def"});
  auto b = batch_of({i, s}, 3);
  const IpcMessage m = message_of(writer_for(b), b);
  // Pieces: i32 values + padding, utf8 offsets, its bytes + padding.
  REQUIRE(m.body.size() >= 3);
  CHECK(m.body[0].data() == i->buffers[0].data());
  CHECK(m.body[2].data() == s->buffers[0].data());
  CHECK(m.body[3].data() == s->buffers[1].data());
}

namespace {

// Buffer @p i of a compressed record batch message, as written: its i64 length prefix (nullopt
// for an empty buffer, which has none) and the bytes behind it, decompressed when the prefix is
// not -1.
std::pair<std::optional<int64_t>, std::string> unpacked(const Parsed& p, size_t i) {
  const std::string b = buf(p, i);
  if (b.empty()) return {std::nullopt, b};
  REQUIRE(b.size() >= 8);
  int64_t prefix;
  std::memcpy(&prefix, b.data(), 8);
  const std::string rest = b.substr(8);
  if (prefix == -1) return {prefix, rest};
  REQUIRE(prefix >= 0);
  CHECK(rest.size() < static_cast<size_t>(prefix));  // compressed only where it is smaller
  std::string out(static_cast<size_t>(prefix), '\0');
  const size_t n = ZSTD_decompress(out.data(), out.size(), rest.data(), rest.size());
  REQUIRE(!ZSTD_isError(n));
  REQUIRE(n == out.size());
  return {prefix, out};
}

// Checks that @p b written with zstd is @p b written plainly, buffer by buffer (same nodes, same
// buffer count, every buffer's bytes the same once unpacked); @return how many buffers were
// compressed and how many written raw behind -1.
std::pair<int, int> compare_compressed(const ColumnPtr& b, StringLayout strings) {
  const Parsed plain = parse(message_of(writer_for(b, {.strings = strings}), b));
  const Parsed zstd = parse(message_of(
      writer_for(b, {.strings = strings, .compression = format::IpcCompression::zstd}), b));
  CHECK(batch(plain).compression() == nullptr);
  const auto* c = batch(zstd).compression();
  REQUIRE(c != nullptr);
  CHECK(c->codec() == afb::CompressionType::ZSTD);
  CHECK(c->method() == afb::BodyCompressionMethod::BUFFER);
  CHECK(batch(zstd).length() == batch(plain).length());
  REQUIRE(batch(zstd).nodes()->size() == batch(plain).nodes()->size());
  for (size_t i = 0; i < batch(plain).nodes()->size(); ++i) CHECK(node(zstd, i) == node(plain, i));
  const auto* pv = batch(plain).variadic_buffer_counts();
  const auto* zv = batch(zstd).variadic_buffer_counts();
  REQUIRE((pv == nullptr) == (zv == nullptr));
  if (pv != nullptr) CHECK(std::equal(pv->begin(), pv->end(), zv->begin(), zv->end()));
  REQUIRE(batch(zstd).buffers()->size() == batch(plain).buffers()->size());
  int compressed = 0, raw = 0;
  for (size_t i = 0; i < batch(plain).buffers()->size(); ++i) {
    INFO("buffer " << i);
    const std::string want = buf(plain, i);
    const auto [prefix, got] = unpacked(zstd, i);
    CHECK(prefix.has_value() == !want.empty());
    CHECK(got == want);
    if (prefix && *prefix == -1)
      ++raw;
    else if (prefix)
      ++compressed;
  }
  return {compressed, raw};
}

}  // namespace

TEST_CASE("zstd bodies: every buffer a length and a frame, or -1 and its bytes",
          "[format][arrow_ipc]") {
  const StringLayout strings = GENERATE(StringLayout::offsets, StringLayout::views);
  INFO("views: " << (strings == StringLayout::views));
  SECTION("repetitive columns compress; small buffers stay raw") {
    std::vector<std::optional<int64_t>> v;
    std::vector<std::optional<std::string>> s;
    for (int i = 0; i < 1000; ++i) {
      v.push_back(i % 7 == 0 ? std::nullopt : std::optional<int64_t>(i % 10));
      s.push_back(i % 11 == 0 ? std::nullopt
                              : std::optional<std::string>("a value of some length"));
    }
    auto b = batch_of({prim<int64_t>(PType::i64, v), strs(s)}, 1000);
    const auto [compressed, raw] = compare_compressed(b, strings);
    CHECK(compressed >= 3);  // the values, the strings' offsets or views, their bytes
    // A slice off a byte boundary is written from row 0, compressed the same way.
    compare_compressed(format::slice(b, 13, 500), strings);
  }
  SECTION("buffers zstd cannot shrink are written raw behind -1") {
    auto b = batch_of({prim<int32_t>(PType::i32, {7, std::nullopt, 9}), strs({"xy", "z", "q"})}, 3);
    const auto [compressed, raw] = compare_compressed(b, strings);
    // Validity, values, and the offsets and bytes; 48 bytes of views are mostly zeros, though.
    CHECK(compressed == (strings == StringLayout::views ? 1 : 0));
    CHECK(raw == (strings == StringLayout::views ? 2 : 4));
  }
  SECTION("no rows: empty buffers stay empty") {
    auto b = batch_of({prim<int32_t>(PType::i32, {}), strs({})}, 0);
    compare_compressed(b, strings);
  }
  SECTION("nested and all-null columns") {
    std::vector<std::optional<int32_t>> e(600, 3);
    std::vector<int32_t> offs;
    for (int i = 0; i <= 200; ++i) offs.push_back(i * 3);
    auto l = list_of(prim<int32_t>(PType::i32, e), offs);
    auto f =
        fixed_list_of(prim<float>(PType::f32, std::vector<std::optional<float>>(400, 1.5f)), 2);
    auto n = prim<int64_t>(PType::i64, std::vector<std::optional<int64_t>>(200, std::nullopt));
    auto b = batch_of({l, f, n}, 200);
    const auto [compressed, raw] = compare_compressed(b, strings);
    CHECK(compressed >= 3);
  }
}

TEST_CASE("the zstd level is the ipc_zstd_level knob by default", "[format][arrow_ipc]") {
  CHECK(ArrowIpcOptions::defaults().zstd_level == defaults().ipc_zstd_level);
  CHECK(ArrowIpcOptions::defaults().compression == format::IpcCompression::none);
  STATIC_REQUIRE(static_cast<uint8_t>(format::IpcCompression::none) == 0);
  STATIC_REQUIRE(static_cast<uint8_t>(format::IpcCompression::zstd) == 1);
  // A higher level writes the same values, in no more bytes here.
  std::vector<std::optional<int64_t>> v;
  for (int i = 0; i < 4000; ++i) v.push_back(i * i % 1000);
  auto b = batch_of({prim<int64_t>(PType::i64, v)}, 4000);
  auto size_at = [&](uint32_t level) {
    const auto m = message_of(
        writer_for(b, {.compression = format::IpcCompression::zstd, .zstd_level = level}), b);
    return m.body_length;
  };
  CHECK(size_at(19) <= size_at(1));
  CHECK(size_at(1) < 4000 * 8);
}
