// SPDX-License-Identifier: Apache-2.0
// fastlanes.delta against an encoder written here from the layout (vortex-data 0.93's Python API
// cannot write the encoding: its editions stop at core2026.08.3, and fastlanes.delta is only in
// preview2025.05.0). Full decodes, slices, takes and validity for every integer width, offsets,
// lengths that are not whole chunks, filters through the generic path, and hostile nodes.
#include <algorithm>
#include <catch2/catch.hpp>
#include <random>
#include <type_traits>

#include "format/compressed_eval.hpp"
#include "format/expr_eval.hpp"
#include "format/expr_parser.hpp"
#include "format/proto/delta.pb.h"
#include "format/proto/scalar.pb.h"
#include "tests/format/bitpacked_fixtures.hpp"
#include "tests/format/fixtures.hpp"

using namespace oc;
using namespace oc::test;
using format::DecodeContext;
using format::RowWindow;

namespace {

// The FastLanes order of row groups, and the two index maps of the layout, as upstream's
// fastlanes crate defines them (`FL_ORDER`, `transpose`, the `iterate!` index).
constexpr unsigned kOrder[8] = {0, 4, 2, 6, 1, 5, 3, 7};
unsigned transpose(unsigned i) { return (i % 16) * 64 + kOrder[(i / 16) % 8] * 8 + i / 128; }
unsigned lane_index(unsigned row, unsigned lane) {
  return kOrder[row / 8] * 16 + (row % 8) * 128 + lane;
}

std::string delta_meta(uint64_t deltas_len, uint64_t offset) {
  pb::DeltaMetadata m;
  m.set_deltas_len(deltas_len);
  m.set_offset(static_cast<uint32_t>(offset));
  return m.SerializeAsString();
}

/// What the reference writer produces for one array.
template <class T>
struct Encoded {
  std::vector<T> bases, deltas;
  std::vector<bool> stored_validity;  // the deltas' validity, bit-transposed per chunk
};

/// Encodes @p physical (whole chunks) as upstream's `delta_compress` does: per chunk, transpose
/// (transposed[i] = chunk[transpose(i)]), keep each lane's first value as its base, store
/// value - previous along each lane (wrapping, through the unsigned type), and transpose the
/// validity bits the other way (stored[transpose(p)] = valid[p]).
template <class T>
Encoded<T> encode(const std::vector<T>& physical, const std::vector<bool>& valid) {
  using U = std::make_unsigned_t<T>;
  constexpr unsigned kBits = sizeof(T) * 8;
  constexpr unsigned kLanes = 1024 / kBits;
  Encoded<T> e;
  e.deltas.resize(physical.size());
  if (!valid.empty()) e.stored_validity.resize(physical.size());
  for (size_t c = 0; c < physical.size() / 1024; ++c) {
    std::vector<U> transposed(1024);
    for (unsigned i = 0; i < 1024; ++i)
      transposed[i] = static_cast<U>(physical[c * 1024 + transpose(i)]);
    for (unsigned lane = 0; lane < kLanes; ++lane) {
      U previous = transposed[lane];
      e.bases.push_back(static_cast<T>(previous));
      for (unsigned row = 0; row < kBits; ++row) {
        const unsigned i = lane_index(row, lane);
        e.deltas[c * 1024 + i] = static_cast<T>(static_cast<U>(transposed[i] - previous));
        previous = transposed[i];
      }
    }
    for (unsigned p = 0; p < 1024 && !valid.empty(); ++p) {
      e.stored_validity[c * 1024 + transpose(p)] = valid[c * 1024 + p];
    }
  }
  return e;
}

/// A test array: @p len logical rows after @p offset leading rows of chunk 0, random values of
/// a few shapes, the padding random too (a decoder must never show it).
template <class T>
struct Case {
  std::vector<T> values;    // logical rows
  std::vector<bool> valid;  // logical rows; empty when not nullable
  ArrayView node;
  DTypePtr type;
};

enum class Shape { increasing, random, decreasing };

template <class T>
Case<T> make_case(uint64_t len, unsigned offset, bool nullable, Shape shape, std::mt19937_64& rng,
                  bool bitpacked_children = false) {
  const uint64_t chunks = (offset + len + 1023) / 1024;
  std::vector<T> physical(chunks * 1024);
  std::vector<bool> valid(nullable ? physical.size() : 0);
  T v = static_cast<T>(rng());
  for (auto& x : physical) {
    switch (shape) {
      case Shape::increasing:
        v = static_cast<T>(v + static_cast<T>(rng() % 7));
        x = v;
        break;
      case Shape::decreasing:
        v = static_cast<T>(v - static_cast<T>(rng() % 1000));
        x = v;
        break;
      case Shape::random:
        x = static_cast<T>(rng());
        break;
    }
  }
  for (size_t i = 0; i < valid.size(); ++i) valid[i] = rng() % 5 != 0;
  const Encoded<T> e = encode(physical, valid);
  Case<T> out;
  out.values.assign(physical.begin() + offset, physical.begin() + offset + len);
  if (nullable) out.valid.assign(valid.begin() + offset, valid.begin() + offset + len);
  constexpr unsigned kBits = sizeof(T) * 8;
  ArrayView bases =
      bitpacked_children ? bitpacked_node(e.bases, kBits, 0) : primitive_node(e.bases);
  ArrayView deltas =
      bitpacked_children ? bitpacked_node(e.deltas, kBits, 0) : primitive_node(e.deltas);
  if (nullable) deltas.children.push_back(bool_node(e.stored_validity));
  out.node = node("fastlanes.delta", delta_meta(physical.size(), offset), {}, {bases, deltas});
  out.type = DType::make_primitive(ptype_of<T>(), nullable);
  return out;
}

/// Checks rows @p rows of @p c (a decode of @p k) against the case's values and validity.
template <class T>
void check_rows(const format::Column& c, const Case<T>& k, const std::vector<uint64_t>& rows) {
  REQUIRE(c.length == rows.size());
  const auto got = values_of<T>(c);
  int64_t nulls = 0;
  for (size_t n = 0; n < rows.size(); ++n) {
    INFO("row " << rows[n] << " (result row " << n << ")");
    const bool valid = k.valid.empty() || k.valid[rows[n]];
    CHECK(c.is_valid(n) == valid);
    if (!valid) ++nulls;
    // Null rows keep the writer's values too (it fills nulls forward; here they are random).
    CHECK(got[n] == k.values[rows[n]]);
  }
  CHECK(c.null_count == nulls);
}

std::vector<uint64_t> iota_rows(uint64_t begin, uint64_t end) {
  std::vector<uint64_t> r(end - begin);
  for (uint64_t i = begin; i < end; ++i) r[i - begin] = i;
  return r;
}

}  // namespace

TEMPLATE_TEST_CASE("fastlanes.delta decodes every integer width, with offsets and nulls",
                   "[format][delta]", uint8_t, int8_t, uint16_t, int16_t, uint32_t, int32_t,
                   uint64_t, int64_t) {
  std::mt19937_64 rng(sizeof(TestType) * 31 + std::is_signed_v<TestType>);
  for (const uint64_t len : {0ull, 1ull, 1000ull, 1024ull, 3000ull}) {
    for (const unsigned offset : {0u, 5u, 1023u}) {
      for (const bool nullable : {false, true}) {
        for (const Shape shape : {Shape::increasing, Shape::random, Shape::decreasing}) {
          INFO("len " << len << " offset " << offset << " nullable " << nullable << " shape "
                      << static_cast<int>(shape));
          const auto k = make_case<TestType>(len, offset, nullable, shape, rng);
          auto c = decode(k.node, k.type, len);
          REQUIRE(c.ok());
          check_rows(**c, k, iota_rows(0, len));
        }
      }
    }
  }
}

TEMPLATE_TEST_CASE("fastlanes.delta slices decode only their chunks and match a full decode",
                   "[format][delta]", uint8_t, int16_t, uint32_t, int64_t) {
  std::mt19937_64 rng(7);
  for (const bool bitpacked : {false, true}) {
    const uint64_t len = 5000;
    const auto k =
        make_case<TestType>(len, 300, /*nullable=*/!bitpacked, Shape::increasing, rng, bitpacked);
    for (const RowWindow w :
         {RowWindow{0, 0}, RowWindow{0, 1}, RowWindow{723, 724}, RowWindow{700, 1800},
          RowWindow{1, 4999}, RowWindow{4000, 5000}, RowWindow{2048, 2048}, RowWindow{0, 5000}}) {
      INFO("bitpacked " << bitpacked << " window " << w.begin << ".." << w.end);
      DecodeContext ctx;
      auto c = ctx.decode_slice(k.node, k.type, len, w);
      REQUIRE(c.ok());
      check_rows(**c, k, iota_rows(w.begin, w.end));
    }
  }
}

TEMPLATE_TEST_CASE("fastlanes.delta takes rows through the lanes they need", "[format][delta]",
                   uint8_t, int16_t, uint32_t, int64_t, uint64_t) {
  std::mt19937_64 rng(11);
  for (const bool bitpacked : {false, true}) {
    for (const bool nullable : {false, true}) {
      const uint64_t len = 4100;
      const auto k = make_case<TestType>(len, 17, nullable, Shape::random, rng, bitpacked);
      std::vector<std::vector<uint64_t>> sets = {
          {}, {0}, {len - 1}, {0, 1, 2, 1006, 1007, 1008, 2047, 4099}, iota_rows(0, len)};
      for (int s = 0; s < 4; ++s) {
        std::vector<uint64_t> rows;
        for (uint64_t i = 0; i < len; ++i)
          if (rng() % 40 == 0) rows.push_back(i);
        sets.push_back(rows);
      }
      for (const auto& rows : sets) {
        INFO("bitpacked " << bitpacked << " nullable " << nullable << " rows " << rows.size());
        DecodeContext ctx;
        auto c = ctx.decode_take(k.node, k.type, len, rows);
        REQUIRE(c.ok());
        check_rows(**c, k, rows);
      }
    }
  }
}

TEST_CASE("fastlanes.delta wraps signed values through their unsigned bits", "[format][delta]") {
  // Crossing zero and both ends of the type: every delta wraps.
  std::vector<int32_t> physical(1024);
  for (size_t i = 0; i < physical.size(); ++i) {
    physical[i] = i % 3 == 0 ? INT32_MIN : i % 3 == 1 ? INT32_MAX : -static_cast<int32_t>(i);
  }
  const auto e = encode(physical, {});
  auto n = node("fastlanes.delta", delta_meta(1024, 0), {},
                {primitive_node(e.bases), primitive_node(e.deltas)});
  auto c = decode(n, DType::make_primitive(PType::i32, false), 1024);
  REQUIRE(c.ok());
  CHECK(values_of<int32_t>(**c) == physical);
}

TEST_CASE("fastlanes.delta golden metadata parses field by field", "[format][delta]") {
  // vortex encodings/fastlanes/goldenfiles/delta.metadata: both fields at their maximum.
  const std::string golden("\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01\x10\xff\xff\xff\xff\x0f",
                           17);
  pb::DeltaMetadata m;
  REQUIRE(m.ParseFromString(golden));
  CHECK(m.deltas_len() == UINT64_MAX);
  CHECK(m.offset() == UINT32_MAX);
  CHECK(delta_meta(UINT64_MAX, UINT32_MAX) == golden);
  auto n = node("fastlanes.delta", golden, {},
                {primitive_node<uint32_t>({}), primitive_node<uint32_t>({})});
  CHECK(decode(n, DType::make_primitive(PType::u32, false), 1).error().code() == Errc::corrupt);
}

TEST_CASE("fastlanes.delta rejects hostile input", "[format][delta]") {
  std::mt19937_64 rng(3);
  const auto k = make_case<uint32_t>(2000, 10, false, Shape::increasing, rng);
  const auto u32 = k.type;
  auto corrupt = [](const Result<ColumnPtr>& r) {
    if (r.ok()) return false;
    UNSCOPED_INFO(r.error().to_string());
    return r.error().code() == Errc::corrupt;
  };
  auto with_meta = [&](uint64_t deltas_len, uint64_t offset) {
    ArrayView n = k.node;
    const std::string m = delta_meta(deltas_len, offset);
    n.metadata.assign(m.begin(), m.end());
    return n;
  };
  REQUIRE(decode(k.node, u32, 2000).ok());
  CHECK(decode(k.node, u32, 2038).ok());                  // up to the padding's end
  CHECK(corrupt(decode(k.node, u32, 2039)));              // past the deltas
  CHECK(corrupt(decode(with_meta(2048, 1024), u32, 1)));  // offset past a chunk
  CHECK(corrupt(decode(with_meta(2000, 10), u32, 100)));  // not whole chunks (pre-0.65 layout)
  CHECK(corrupt(decode(with_meta(4096, 10), u32, 100)));  // children shorter than the metadata
  CHECK(corrupt(decode(with_meta(1024, 10), u32, 100)));  // children longer than the metadata
  CHECK(corrupt(decode(with_meta(UINT64_MAX - 1023, 0), u32, 1)));  // beyond any allocation
  ArrayView garbage = k.node;
  garbage.metadata = {0xff, 0xff};
  CHECK(corrupt(decode(garbage, u32, 1)));
  // Types: floats, strings and bools are not delta-encoded.
  CHECK(corrupt(decode(k.node, DType::make_primitive(PType::f32, false), 10)));
  CHECK(corrupt(decode(k.node, DType::make_utf8(false), 10)));
  // Shape: one child, a buffer.
  ArrayView one_child = k.node;
  one_child.children.pop_back();
  CHECK(corrupt(decode(one_child, u32, 10)));
  ArrayView with_buffer = k.node;
  with_buffer.buffers.push_back(buffer_of(std::vector<uint8_t>{1}));
  CHECK(corrupt(decode(with_buffer, u32, 10)));
  // Read as another width, the children hold the wrong number of values.
  CHECK(corrupt(decode(k.node, DType::make_primitive(PType::u64, false), 10)));
  ArrayView short_bases = k.node;
  short_bases.children[0] = primitive_node(std::vector<uint32_t>(63));
  CHECK(corrupt(decode(short_bases, u32, 10)));
  // A take sees the same checks.
  DecodeContext ctx;
  const std::vector<uint64_t> rows{0, 5};
  CHECK(corrupt(ctx.decode_take(with_meta(2048, 1024), u32, 10, rows)));
  CHECK(corrupt(ctx.decode_take(short_bases, u32, 2000, rows)));
}

TEST_CASE("a delta column filters through the generic path", "[format][delta]") {
  std::mt19937_64 rng(5);
  const uint64_t len = 3000;
  const auto k = make_case<int64_t>(len, 40, /*nullable=*/true, Shape::increasing, rng);
  const int64_t pivot = k.values[1500];
  const std::string sql = "value > " + std::to_string(pivot);
  auto e = format::parse_expr(sql);
  REQUIRE(e.ok());
  auto pred = format::bind(**e, *DType::make_struct({"value"}, {k.type}, false), sql);
  REQUIRE(pred.ok());

  DecodeContext ctx;
  const RowWindow w{100, 2900};
  // No compressed path at a delta root: the caller decodes and evaluates.
  auto compressed = format::evaluate_compressed(*pred, k.node, k.type, len, w, ctx);
  REQUIRE(compressed.ok());
  CHECK_FALSE(compressed->has_value());

  auto decoded = ctx.decode_slice(k.node, k.type, len, w);
  REQUIRE(decoded.ok());
  auto batch = std::make_shared<format::Column>();
  batch->dtype = DType::make_struct({"value"}, {k.type}, false);
  batch->length = (*decoded)->length;
  batch->children = {*decoded};
  auto truth = format::evaluate_truth(*pred, *batch);
  REQUIRE(truth.ok());
  REQUIRE(truth->size() == w.size());
  for (uint64_t i = 0; i < w.size(); ++i) {
    const uint64_t row = w.begin + i;
    const auto want = !k.valid[row]           ? format::Truth::null
                      : k.values[row] > pivot ? format::Truth::true_
                                              : format::Truth::false_;
    CHECK((*truth)[i] == want);
  }

  // Under a FoR root (how writers stack it), the compressed path decodes the delta child.
  pb::ScalarValue reference;
  reference.set_int64_value(-5);
  const auto for_root = node("fastlanes.for", reference.SerializeAsString(), {}, {k.node});
  auto via_for = format::evaluate_compressed(*pred, for_root, k.type, len, w, ctx);
  REQUIRE(via_for.ok());
  REQUIRE(via_for->has_value());
  for (uint64_t i = 0; i < w.size(); ++i) {
    const uint64_t row = w.begin + i;
    const auto want = !k.valid[row] ? format::Truth::null
                      : static_cast<int64_t>(static_cast<uint64_t>(k.values[row]) - 5) > pivot
                          ? format::Truth::true_
                          : format::Truth::false_;
    CHECK((**via_for)[i] == static_cast<uint8_t>(want));
  }
}
