// SPDX-License-Identifier: Apache-2.0
// evaluate_compressed against the reference it must equal byte for byte: decoding the window
// and running evaluate_truth. Arrays and predicates are random (seeded): every comparison, NULL
// and IS [NOT] NULL, NOT, AND/OR, BETWEEN, IN, literals inside, between, below and above the
// values and past the type's range, on windows at the start, middle and end and empty ones.
#include <algorithm>
#include <array>
#include <catch2/catch.hpp>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <type_traits>

#include "format/compressed_eval.hpp"
#include "format/expr_eval.hpp"
#include "format/expr_parser.hpp"
#include "format/proto/dict.pb.h"
#include "format/proto/runend.pb.h"
#include "format/proto/scalar.pb.h"
#include "tests/format/bitpacked_fixtures.hpp"
#include "tests/format/fixtures.hpp"
#include "tests/format/nested_golden.hpp"

using namespace oc;
using namespace oc::test;
using format::BoundExpr;
using format::DecodeContext;
using format::RowWindow;
using format::TimeUnit;

namespace {

__extension__ typedef __int128 Wide;  // NOLINT(modernize-use-using): __extension__ needs typedef

using LiteralGen = std::function<std::string()>;

BoundExpr bound(const std::string& sql, const DTypePtr& t) {
  auto e = format::parse_expr(sql);
  REQUIRE(e.ok());
  auto b = format::bind(**e, *DType::make_struct({"value"}, {t}, false), sql);
  if (!b.ok()) FAIL(b.error().to_string());
  return std::move(*b);
}

// The reference: decode the window, evaluate on it.
std::vector<uint8_t> decoded_truth(const BoundExpr& pred, const ArrayView& n, const DTypePtr& t,
                                   uint64_t len, RowWindow w) {
  DecodeContext ctx;
  auto c = ctx.decode_slice(n, t, len, w);
  if (!c.ok()) FAIL(c.error().to_string());
  auto batch = std::make_shared<format::Column>();
  batch->dtype = DType::make_struct({"value"}, {t}, false);
  batch->length = (*c)->length;
  batch->children = {*c};
  auto truth = format::evaluate_truth(pred, *batch);
  if (!truth.ok()) FAIL(truth.error().to_string());
  std::vector<uint8_t> out;
  for (auto v : *truth) out.push_back(static_cast<uint8_t>(v));
  return out;
}

std::vector<RowWindow> windows_of(uint64_t len, std::mt19937_64& rng) {
  const uint64_t a = rng() % (len + 1), b = rng() % (len + 1);
  const uint64_t k = rng() % (len + 1);
  return {{0, len}, {0, k}, {std::min(a, b), std::max(a, b)}, {len - k, len}, {len, len}, {a, a}};
}

// Checks that @p sql evaluates on @p n (compressed) as on its decoded rows, on several windows.
void check_same(const std::string& sql, const ArrayView& n, const DTypePtr& t, uint64_t len,
                std::mt19937_64& rng) {
  INFO(sql << " on " << n.encoding << " of " << t->to_string() << ", " << len << " rows");
  const BoundExpr pred = bound(sql, t);
  for (const RowWindow w : windows_of(len, rng)) {
    INFO("window [" << w.begin << ", " << w.end << ")");
    DecodeContext ctx;
    auto got = format::evaluate_compressed(pred, n, t, len, w, ctx);
    if (!got.ok()) FAIL(got.error().to_string());
    REQUIRE(got->has_value());
    CHECK(**got == decoded_truth(pred, n, t, len, w));
  }
}

// A random predicate on `value` with literals from @p lit, up to @p depth levels of NOT, AND
// and OR; @p extra (if set) adds leaves of its own (a bare bool column, LIKE).
std::string random_predicate(std::mt19937_64& rng, const LiteralGen& lit, int depth,
                             const LiteralGen& extra = {}) {
  static constexpr std::array<const char*, 6> kOps = {"=", "!=", "<", "<=", ">", ">="};
  const std::string op = kOps[rng() % kOps.size()];
  switch (rng() % (depth > 0 ? 11 : 8)) {
    case 0:
    case 1:
      return "value " + op + " " + lit();
    case 2:
      return lit() + " " + op + " value";
    case 3:
      if (extra) return extra();
      return "value " + op + " " + lit();
    case 4:
      return rng() % 2 ? "value IS NULL" : "value IS NOT NULL";
    case 5:
      return "value " + op + " NULL";
    case 6:
      return "value BETWEEN " + lit() + " AND " + lit();
    case 7:
      return "value IN (" + lit() + ", " + lit() + ", " + lit() + ")";
    case 8:
      return "NOT (" + random_predicate(rng, lit, depth - 1, extra) + ")";
    default:
      return "(" + random_predicate(rng, lit, depth - 1, extra) +
             (rng() % 2 ? ") AND (" : ") OR (") + random_predicate(rng, lit, depth - 1, extra) +
             ")";
  }
}

std::string wide_to_string(Wide v) {
  v = std::clamp<Wide>(v, std::numeric_limits<int64_t>::min(),
                       std::numeric_limits<uint64_t>::max());
  return v < 0 ? std::to_string(static_cast<int64_t>(v)) : std::to_string(static_cast<uint64_t>(v));
}

// Integer literals: values present, their neighbours, values outside the data, the type's
// limits and beyond them, the extremes of the literal range.
template <class T>
LiteralGen int_literals(std::mt19937_64& rng, const std::vector<T>& data) {
  return [&rng, &data] {
    constexpr Wide kLo = std::numeric_limits<T>::min(), kHi = std::numeric_limits<T>::max();
    const Wide some = data.empty() ? 0 : Wide{data[rng() % data.size()]};
    const auto [lo, hi] = data.empty()
                              ? std::pair<T, T>{0, 0}
                              : std::pair<T, T>{*std::min_element(data.begin(), data.end()),
                                                *std::max_element(data.begin(), data.end())};
    switch (rng() % 9) {
      case 0:
      case 1:
        return wide_to_string(some);
      case 2:
        return wide_to_string(some + 1);
      case 3:
        return wide_to_string(some - 1);
      case 4:
        return wide_to_string(kLo - Wide(rng() % 3));
      case 5:
        return wide_to_string(kHi + Wide(rng() % 3));
      case 6:
        return wide_to_string(Wide{lo} - 1 - Wide(rng() % 100));
      case 7:
        return wide_to_string(Wide{hi} + 1 + Wide(rng() % 100));
      default:
        return wide_to_string(rng() % 2 ? Wide{std::numeric_limits<int64_t>::min()}
                                        : Wide{std::numeric_limits<uint64_t>::max()});
    }
  };
}

std::vector<bool> random_validity(std::mt19937_64& rng, uint64_t len) {
  const unsigned null_percent = rng() % 3 == 0 ? 100 : static_cast<unsigned>(rng() % 40);
  std::vector<bool> v(len);
  for (uint64_t i = 0; i < len; ++i) v[i] = rng() % 100 >= null_percent;
  return v;
}

std::string int_scalar(int64_t v) {
  pb::ScalarValue s;
  s.set_int64_value(v);
  return s.SerializeAsString();
}

std::string uint_scalar(uint64_t v) {
  pb::ScalarValue s;
  s.set_uint64_value(v);
  return s.SerializeAsString();
}

// ---- fastlanes.for -----------------------------------------------------------------------------

// A FoR array of T over a primitive or bitpacked child with random encoded bits of a random
// width and a random reference (so some values wrap past the type's maximum, as the format
// allows), then random predicates.
template <class T>
void check_for(std::mt19937_64& rng, bool nullable, bool bitpacked) {
  using U = std::make_unsigned_t<T>;
  constexpr unsigned kBits = sizeof(T) * 8;
  const uint64_t len = 1 + rng() % 2500;
  const unsigned width = static_cast<unsigned>(rng() % (kBits + 1));
  const uint64_t mask = width == 64 ? ~uint64_t{0} : (uint64_t{1} << width) - 1;
  std::vector<U> encoded(len);
  for (auto& u : encoded) u = static_cast<U>(rng() & mask);
  const U reference = rng() % 2 ? static_cast<U>(rng()) : static_cast<U>(rng() % 16);
  std::vector<T> data(len);
  for (uint64_t i = 0; i < len; ++i)
    data[i] = static_cast<T>(static_cast<U>(encoded[i] + reference));

  ArrayView child;
  if (bitpacked) {
    child = bitpacked_node<U>(encoded, width, static_cast<unsigned>(rng() % 1024));
  } else {
    child = primitive_node<T>(std::vector<T>(encoded.begin(), encoded.end()));
  }
  if (nullable) child.children.push_back(bool_node(random_validity(rng, len)));
  const std::string ref =
      std::is_signed_v<T> ? int_scalar(static_cast<T>(reference)) : uint_scalar(reference);
  const ArrayView n = node("fastlanes.for", ref, {}, {child});
  const DTypePtr t = DType::make_primitive(ptype_of<T>(), nullable);
  const LiteralGen lit = int_literals<T>(rng, data);
  for (int i = 0; i < 25; ++i) check_same(random_predicate(rng, lit, 3), n, t, len, rng);
}

TEMPLATE_TEST_CASE("fastlanes.for compares in the encoded domain like decoding", "[ceval]", uint8_t,
                   int8_t, uint16_t, int16_t, uint32_t, int32_t, uint64_t, int64_t) {
  std::mt19937_64 rng(20240611 + sizeof(TestType) + std::is_signed_v<TestType>);
  for (int round = 0; round < 6; ++round) {
    check_for<TestType>(rng, round % 2 == 1, round % 3 != 0);
  }
}

TEST_CASE("fastlanes.for on timestamps and dates compares instants exactly", "[ceval]") {
  using nested_golden::make_temporal;
  std::mt19937_64 rng(7);
  // 2024-01-31 00:00:00 UTC, and the literals around it.
  constexpr int64_t kSecond = 1706659200;
  const std::vector<std::string> instants = {"DATE '2024-01-30'",
                                             "DATE '2024-01-31'",
                                             "DATE '2024-02-01'",
                                             "DATE '1970-01-01'",
                                             "TIMESTAMP '2024-01-31 00:00:00'",
                                             "TIMESTAMP '2024-01-31 00:00:00.5'",
                                             "TIMESTAMP '2024-01-30 23:59:59.999'",
                                             "TIMESTAMP '2024-01-31 00:00:01.0015'",
                                             "TIMESTAMP '2024-01-31 00:00:00.000001'",
                                             "TIMESTAMP '1969-12-31 23:59:59.999999'"};
  const LiteralGen lit = [&] { return instants[rng() % instants.size()]; };
  struct Case {
    DTypePtr t;
    int64_t center, spread;
  };
  const std::vector<Case> cases = {
      {make_temporal("vortex.timestamp", TimeUnit::s, PType::i64, true), kSecond, 3},
      {make_temporal("vortex.timestamp", TimeUnit::ms, PType::i64, false), kSecond * 1000, 3000},
      {make_temporal("vortex.timestamp", TimeUnit::us, PType::i64, true, "UTC"),
       kSecond * 1'000'000, 2'000'000},
      {make_temporal("vortex.timestamp", TimeUnit::ns, PType::i64, true), kSecond * 1'000'000'000,
       2'000'000'000},
      {make_temporal("vortex.date", TimeUnit::days, PType::i32, true), 19753, 3},
  };
  for (const auto& c : cases) {
    const uint64_t len = 1 + rng() % 500;
    const int64_t reference = c.center - c.spread;
    const bool i32 = c.t->storage().ptype == PType::i32;
    ArrayView child;
    if (i32) {
      std::vector<int32_t> encoded(len);
      for (auto& u : encoded) u = static_cast<int32_t>(rng() % (2 * c.spread + 1));
      child = primitive_node(encoded);
    } else {
      std::vector<int64_t> encoded(len);
      for (auto& u : encoded) u = static_cast<int64_t>(rng() % (2 * c.spread + 1));
      // A few exact hits on the literals' sub-unit instants.
      for (int k = 0; k < 5; ++k) encoded[rng() % len] = c.spread;
      child = primitive_node(encoded);
    }
    if (c.t->nullable) child.children.push_back(bool_node(random_validity(rng, len)));
    const ArrayView n = node("fastlanes.for", int_scalar(reference), {}, {child});
    for (int i = 0; i < 40; ++i) check_same(random_predicate(rng, lit, 2), n, c.t, len, rng);
  }
}

TEST_CASE("vortex.ext evaluates on its storage's encoding with the extension's type", "[ceval]") {
  // How writers store dates: vortex.ext over FoR over bitpacked (TPC-H's l_shipdate).
  using nested_golden::make_temporal;
  std::mt19937_64 rng(11);
  const DTypePtr t = make_temporal("vortex.date", TimeUnit::days, PType::i32, true);
  const std::vector<std::string> days = {"DATE '2024-01-30'", "DATE '2024-01-31'",
                                         "DATE '2024-02-03'", "TIMESTAMP '2024-01-31 12:00:00'",
                                         "DATE '1970-01-01'"};
  const LiteralGen lit = [&] { return days[rng() % days.size()]; };
  for (int round = 0; round < 4; ++round) {
    const uint64_t len = 1 + rng() % 3000;
    std::vector<uint32_t> encoded(len);
    for (auto& u : encoded) u = static_cast<uint32_t>(rng() % 8);
    ArrayView packed = bitpacked_node<uint32_t>(encoded, 3, static_cast<unsigned>(rng() % 1024));
    packed.children.push_back(bool_node(random_validity(rng, len)));
    const ArrayView n = node("vortex.ext", {}, {},
                             {node("fastlanes.for", int_scalar(int32_t{19750}), {}, {packed})});
    for (int i = 0; i < 30; ++i) check_same(random_predicate(rng, lit, 2), n, t, len, rng);
  }
  // Over an encoding without a compressed path, it declines as that encoding does.
  const ArrayView plain = node("vortex.ext", {}, {}, {primitive_node<int32_t>({1, 2, 3})});
  DecodeContext ctx;
  auto none =
      format::evaluate_compressed(bound("value > DATE '1970-01-02'", t), plain, t, 3, {0, 3}, ctx);
  REQUIRE(none.ok());
  CHECK_FALSE(none->has_value());
}

TEST_CASE("fastlanes.for decides literals outside the type for every row", "[ceval]") {
  std::mt19937_64 rng(3);
  // u8 values 250..255 and 0..4 (wrapped): out-of-range literals must not wrap with them.
  const std::vector<uint8_t> encoded = {0, 1, 5, 6, 9, 10};
  const ArrayView n = node("fastlanes.for", uint_scalar(250), {}, {primitive_node(encoded)});
  const auto u8 = DType::make_primitive(PType::u8, false);
  for (const char* sql : {"value < 256", "value >= -1", "value = 256", "value != -6",
                          "value > 18446744073709551615", "value <= -9223372036854775808",
                          "value >= 250", "value < 250", "value = 0", "value != 255"}) {
    check_same(sql, n, u8, encoded.size(), rng);
  }
}

// ---- vortex.dict -------------------------------------------------------------------------------

std::string dict_meta(uint64_t values_len, PType codes, bool nullable_codes) {
  pb::DictMetadata m;
  m.set_values_len(values_len);
  m.set_codes_ptype(static_cast<uint32_t>(codes));
  m.set_is_nullable_codes(nullable_codes);
  return m.SerializeAsString();
}

// Codes for @p len rows into @p values_len values: primitive u8 or bitpacked u16, nullable
// (with some null codes) when @p nullable.
std::pair<ArrayView, PType> random_codes(std::mt19937_64& rng, uint64_t len, uint64_t values_len,
                                         bool nullable) {
  std::vector<uint16_t> codes(len);
  for (auto& c : codes) c = values_len == 0 ? 0 : static_cast<uint16_t>(rng() % values_len);
  std::vector<bool> valid = nullable ? random_validity(rng, len) : std::vector<bool>();
  if (values_len == 0) valid.assign(len, false);
  ArrayView n;
  PType p = PType::u16;
  if (values_len <= 256 && rng() % 2) {
    n = primitive_node(std::vector<uint8_t>(codes.begin(), codes.end()));
    p = PType::u8;
  } else {
    unsigned width = 0;
    while ((uint64_t{1} << width) < values_len) ++width;
    n = bitpacked_node<uint16_t>(codes, width, static_cast<unsigned>(rng() % 1024));
  }
  if (nullable) n.children.push_back(bool_node(valid));
  return {n, p};
}

TEST_CASE("vortex.dict evaluates once per value and maps the codes", "[ceval]") {
  std::mt19937_64 rng(11);
  for (int round = 0; round < 12; ++round) {
    const bool nullable = round % 2 == 1;
    const uint64_t len = rng() % 2000;
    const bool nullable_codes = nullable && rng() % 3 != 0;
    // Only null codes can refer to an empty dictionary.
    const uint64_t values_len = nullable_codes && round % 5 == 1 ? 0 : 1 + rng() % 300;
    std::vector<int32_t> values(values_len);
    for (auto& v : values) v = static_cast<int32_t>(rng() % 1000) - 500;
    ArrayView values_node = primitive_node(values);
    if (nullable) values_node.children.push_back(bool_node(random_validity(rng, values_len)));
    auto [codes, codes_ptype] = random_codes(rng, len, values_len, nullable_codes);
    const ArrayView n = node("vortex.dict", dict_meta(values_len, codes_ptype, nullable_codes), {},
                             {codes, values_node});
    const DTypePtr t = DType::make_primitive(PType::i32, nullable);
    const LiteralGen ints = int_literals<int32_t>(rng, values);
    // Float literals compare as doubles: no encoded rewrite, but dict takes any predicate.
    const LiteralGen lit = [&] { return rng() % 5 ? ints() : std::to_string(rng() % 100) + ".5"; };
    for (int i = 0; i < 25; ++i) check_same(random_predicate(rng, lit, 3), n, t, len, rng);
  }
}

// A vortex.varbin node of @p values (i32 offsets), with @p valid as its validity when given.
ArrayView varbin_node(const std::vector<std::string>& values, const std::vector<bool>& valid) {
  std::string bytes;
  std::vector<int32_t> offsets = {0};
  for (const auto& v : values) {
    bytes += v;
    offsets.push_back(static_cast<int32_t>(bytes.size()));
  }
  ArrayView n = node("vortex.varbin", "\x08\x06", {bytes_of(bytes)}, {primitive_node(offsets)});
  if (!valid.empty()) n.children.push_back(bool_node(valid));
  return n;
}

TEST_CASE("vortex.dict of strings evaluates comparisons and LIKE per value", "[ceval]") {
  std::mt19937_64 rng(12);
  const std::vector<std::string> words = {"",  "a",  "ab", "abc",
                                          "b", "ba", "zz", "\xc3\xa9t\xc3\xa9"};
  const LiteralGen lit = [&] { return "'" + words[rng() % words.size()] + "'"; };
  const LiteralGen like = [&] { return "value LIKE '" + words[rng() % words.size()] + "%'"; };
  for (int round = 0; round < 6; ++round) {
    const bool nullable = round % 2 == 1;
    const uint64_t len = rng() % 1500;
    const uint64_t values_len = 1 + rng() % words.size();
    std::vector<std::string> values(words.begin(), words.begin() + values_len);
    const ArrayView values_node =
        varbin_node(values, nullable ? random_validity(rng, values_len) : std::vector<bool>());
    auto [codes, codes_ptype] = random_codes(rng, len, values_len, nullable);
    const ArrayView n =
        node("vortex.dict", dict_meta(values_len, codes_ptype, nullable), {}, {codes, values_node});
    const DTypePtr t = DType::make_utf8(nullable);
    for (int i = 0; i < 25; ++i) check_same(random_predicate(rng, lit, 3, like), n, t, len, rng);
  }
}

// ---- vortex.runend -----------------------------------------------------------------------------

std::string runend_meta(uint64_t runs, uint64_t offset) {
  pb::RunEndMetadata m;
  m.set_ends_ptype(static_cast<uint32_t>(PType::u32));
  m.set_num_runs(runs);
  m.set_offset(offset);
  return m.SerializeAsString();
}

// Run ends covering rows [offset, offset + len) and somewhat past them.
std::vector<uint32_t> random_ends(std::mt19937_64& rng, uint64_t len, uint64_t offset) {
  std::vector<uint32_t> ends;
  uint64_t end = offset;
  while (end < offset + len || (len == 0 && ends.empty())) {
    end += 1 + rng() % (rng() % 2 ? 3 : 60);
    ends.push_back(static_cast<uint32_t>(end));
  }
  return ends;
}

TEST_CASE("vortex.runend evaluates once per run from its offset", "[ceval]") {
  std::mt19937_64 rng(13);
  for (int round = 0; round < 12; ++round) {
    const bool nullable = round % 2 == 1;
    const uint64_t len = round == 0 ? 0 : 1 + rng() % 2000;
    const uint64_t offset = rng() % 2 ? 0 : rng() % 100;
    const std::vector<uint32_t> ends = random_ends(rng, len, offset);
    std::vector<int64_t> values(ends.size());
    for (auto& v : values) v = static_cast<int64_t>(rng() % 200) - 100;
    ArrayView values_node = primitive_node(values);
    if (nullable) values_node.children.push_back(bool_node(random_validity(rng, values.size())));
    const ArrayView n = node("vortex.runend", runend_meta(ends.size(), offset), {},
                             {primitive_node(ends), values_node});
    const DTypePtr t = DType::make_primitive(PType::i64, nullable);
    const LiteralGen lit = int_literals<int64_t>(rng, values);
    for (int i = 0; i < 25; ++i) check_same(random_predicate(rng, lit, 3), n, t, len, rng);
  }
}

TEST_CASE("vortex.runend of bools takes bare-column predicates", "[ceval]") {
  std::mt19937_64 rng(14);
  const LiteralGen lit = [&] { return rng() % 2 ? std::string("TRUE") : std::string("FALSE"); };
  const LiteralGen bare = [&] {
    return rng() % 2 ? std::string("value") : std::string("NOT value");
  };
  for (int round = 0; round < 6; ++round) {
    const bool nullable = round % 2 == 1;
    const uint64_t len = 1 + rng() % 1000;
    const uint64_t offset = rng() % 10;
    const std::vector<uint32_t> ends = random_ends(rng, len, offset);
    std::vector<bool> values(ends.size());
    for (size_t i = 0; i < values.size(); ++i) values[i] = rng() % 2;
    ArrayView values_node = bool_node(values);
    if (nullable) values_node.children.push_back(bool_node(random_validity(rng, values.size())));
    const ArrayView n = node("vortex.runend", runend_meta(ends.size(), offset), {},
                             {primitive_node(ends), values_node});
    const DTypePtr t = DType::make_bool(nullable);
    for (int i = 0; i < 25; ++i) check_same(random_predicate(rng, lit, 3, bare), n, t, len, rng);
  }
}

// ---- vortex.constant ---------------------------------------------------------------------------

TEST_CASE("vortex.constant evaluates once and replicates", "[ceval]") {
  std::mt19937_64 rng(15);
  const std::vector<int32_t> around = {-5, 0, 7, std::numeric_limits<int32_t>::max()};
  const LiteralGen lit = int_literals<int32_t>(rng, around);
  const auto i32 = DType::make_primitive(PType::i32, true);
  for (const int32_t v : around) {
    const ArrayView n = node("vortex.constant", {}, {bytes_of(int_scalar(v))});
    for (int i = 0; i < 25; ++i)
      check_same(random_predicate(rng, lit, 3), n, i32, rng() % 3000, rng);
  }
  // A null constant (an empty scalar), and a string.
  const ArrayView null_node = node("vortex.constant", {}, {Buffer()});
  for (int i = 0; i < 25; ++i) check_same(random_predicate(rng, lit, 3), null_node, i32, 100, rng);
  pb::ScalarValue s;
  s.set_string_value("abc");
  const ArrayView str = node("vortex.constant", {}, {bytes_of(s.SerializeAsString())});
  const LiteralGen words = [&] { return rng() % 2 ? std::string("'abc'") : std::string("'b'"); };
  const LiteralGen like = [] { return std::string("value LIKE 'ab%'"); };
  for (int i = 0; i < 25; ++i) {
    check_same(random_predicate(rng, words, 3, like), str, DType::make_utf8(false), 50, rng);
  }
}

// ---- no compressed path, and errors ------------------------------------------------------------

TEST_CASE("evaluate_compressed declines encodings and predicates it cannot run", "[ceval]") {
  const auto i32 = DType::make_primitive(PType::i32, false);
  const auto pred = bound("value > 3", i32);
  DecodeContext ctx;
  const auto plain = primitive_node<int32_t>({1, 5, 9});
  auto r = format::evaluate_compressed(pred, plain, i32, 3, {0, 3}, ctx);
  REQUIRE(r.ok());
  CHECK_FALSE(r->has_value());

  // FoR with a float literal: the column converts to double, which has no exact rewrite.
  const auto for_node =
      node("fastlanes.for", int_scalar(10), {}, {primitive_node<int32_t>({0, 1})});
  r = format::evaluate_compressed(bound("value < 10.5", i32), for_node, i32, 2, {0, 2}, ctx);
  REQUIRE(r.ok());
  CHECK_FALSE(r->has_value());
  r = format::evaluate_compressed(bound("value < 10 OR value > 2.5", i32), for_node, i32, 2, {0, 2},
                                  ctx);
  REQUIRE(r.ok());
  CHECK_FALSE(r->has_value());
  r = format::evaluate_compressed(bound("value <= 10", i32), for_node, i32, 2, {0, 2}, ctx);
  REQUIRE(r.ok());
  CHECK(r->value() == std::vector<uint8_t>{1, 0});
}

TEST_CASE("evaluate_compressed reports corrupt arrays and bad windows", "[ceval]") {
  const auto i32 = DType::make_primitive(PType::i32, false);
  const auto pred = bound("value > 3", i32);
  DecodeContext ctx;
  const auto dict = node("vortex.dict", dict_meta(2, PType::u8, false), {},
                         {primitive_node<uint8_t>({0, 1, 2}), primitive_node<int32_t>({4, 5})});
  auto r = format::evaluate_compressed(pred, dict, i32, 3, {0, 3}, ctx);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code() == Errc::corrupt);  // code 2 of 2 values
  r = format::evaluate_compressed(pred, dict, i32, 3, {0, 2}, ctx);
  REQUIRE(r.ok());
  CHECK(r->value() == std::vector<uint8_t>{1, 1});
  r = format::evaluate_compressed(pred, dict, i32, 3, {2, 4}, ctx);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code() == Errc::invalid);

  // Runs that stop short of the rows.
  const auto runend = node("vortex.runend", runend_meta(2, 0), {},
                           {primitive_node<uint32_t>({1, 2}), primitive_node<int32_t>({4, 5})});
  r = format::evaluate_compressed(pred, runend, i32, 3, {0, 1}, ctx);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code() == Errc::corrupt);
  // A null FoR reference.
  const auto for_node = node("fastlanes.for", "", {}, {primitive_node<int32_t>({0, 1})});
  r = format::evaluate_compressed(pred, for_node, i32, 2, {0, 2}, ctx);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code() == Errc::corrupt);
}

}  // namespace
