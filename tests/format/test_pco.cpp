// SPDX-License-Identifier: Apache-2.0
// vortex.pco: golden arrays from vortex-data 0.93's compact writer (tests/format/golden/gen_pco.py)
// decoded bit for bit, in full, by slices and by takes; arrays of two pco chunks; hostile
// metadata. The pcodec decoder itself is tested against the pcodec package in test_pcodec.cpp
// and tests/interop/test_pcodec_oracle.py.
#include <catch2/catch.hpp>
#include <random>

#include "format/proto/pco.pb.h"
#include "tests/format/alp_golden.hpp"
#include "tests/format/fixtures.hpp"

using namespace oc;
using namespace oc::test;

namespace {

const char* const kCases[] = {"pco_f64_nulls",          "pco_f32_normal", "pco_i64_walk",
                              "pco_i64_mult_nulls",     "pco_u32_skewed", "pco_i16_walk",
                              "pco_u16_sine_half_null", "pco_i32_sine",   "pco_f16"};

pb::PcoMetadata metadata_of(const ArrayView& n) {
  pb::PcoMetadata m;
  REQUIRE(m.ParseFromArray(n.metadata.data(), static_cast<int>(n.metadata.size())));
  return m;
}

void set_metadata(ArrayView& n, const pb::PcoMetadata& m) {
  const std::string s = m.SerializeAsString();
  n.metadata.assign(s.begin(), s.end());
}

// The rows of @p e as a column: the oracle's values, for comparisons with rows_of.
std::vector<std::string> expected_rows(const alp_golden::Expected& e) {
  auto values = std::make_shared<format::Column>();
  values->dtype = alp_golden::dtype_of(e);
  values->length = e.rows;
  values->buffers.push_back(bytes_of(e.values));
  if (e.nullable) {
    Buffer bits = format::make_bitmap(e.rows, true);
    for (uint64_t i = 0; i < e.rows; ++i)
      format::bitmap_set(bits.mutable_data(), i, e.valid[i] != 0);
    values->validity = bits;
    values->null_count = format::count_nulls(bits.data(), 0, e.rows);
  }
  return rows_of(*values);
}

std::vector<std::string> slice_rows(const std::vector<std::string>& rows, uint64_t begin,
                                    uint64_t end) {
  return {rows.begin() + static_cast<std::ptrdiff_t>(begin),
          rows.begin() + static_cast<std::ptrdiff_t>(end)};
}

}  // namespace

TEST_CASE("vortex.pco: the compact writer's arrays decode bit for bit", "[format][pco]") {
  for (const char* name : kCases) {
    alp_golden::check(name);
  }
}

TEST_CASE("vortex.pco: slices decode only their pages and equal the oracle's rows",
          "[format][pco]") {
  for (const char* name : kCases) {
    const auto g = alp_golden::load(name);
    const auto want = expected_rows(g.expected);
    const uint64_t n = g.expected.rows;
    const auto t = alp_golden::dtype_of(g.expected);
    // Pages hold 8192 valid values: windows inside one page, across the boundary, at the ends.
    const std::vector<format::RowWindow> windows = {
        {0, 1}, {0, n}, {5, 100}, {8000, 8400}, {8192, n}, {n - 1, n}, {4096, 11000}};
    for (const auto w : windows) {
      INFO(name << " rows " << w.begin << ".." << w.end);
      format::DecodeContext ctx;
      auto got = ctx.decode_slice(g.root, t, n, w);
      REQUIRE(got.ok());
      CHECK(rows_of(**got) == slice_rows(want, w.begin, w.end));
    }
  }
}

TEST_CASE("vortex.pco: takes gather from the pages their rows fall in", "[format][pco]") {
  std::mt19937_64 rng(7);
  for (const char* name : kCases) {
    const auto g = alp_golden::load(name);
    const auto want = expected_rows(g.expected);
    const uint64_t n = g.expected.rows;
    const auto t = alp_golden::dtype_of(g.expected);
    std::vector<std::vector<uint64_t>> row_sets = {{0}, {n - 1}, {0, 8191, 8192, n - 1}};
    std::vector<uint64_t> random;
    for (uint64_t r = 0; r < n; ++r) {
      if (rng() % 97 == 0) random.push_back(r);
    }
    row_sets.push_back(random);
    for (const auto& rows : row_sets) {
      INFO(name << ": " << rows.size() << " rows");
      format::DecodeContext ctx;
      auto got = ctx.decode_take(g.root, t, n, rows);
      REQUIRE(got.ok());
      std::vector<std::string> expect;
      for (uint64_t r : rows) expect.push_back(want[r]);
      CHECK(rows_of(**got) == expect);
    }
  }
}

TEST_CASE("vortex.pco: two chunks, every chunk meta before every page", "[format][pco]") {
  // Two copies of one array as one: chunk metas [a, b], then the pages of a, then those of b.
  for (const char* name : {"pco_i64_walk", "pco_f64_nulls"}) {
    INFO(name);
    const auto g = alp_golden::load(name);
    const uint64_t n = g.expected.rows;
    const auto t = alp_golden::dtype_of(g.expected);
    pb::PcoMetadata m = metadata_of(g.root);
    REQUIRE(m.chunks_size() == 1);
    REQUIRE(m.chunks(0).pages_size() >= 2);
    *m.add_chunks() = m.chunks(0);
    ArrayView twice = g.root;
    set_metadata(twice, m);
    twice.buffers.clear();
    twice.buffers.push_back(g.root.buffers[0]);
    twice.buffers.push_back(g.root.buffers[0]);
    for (int copy = 0; copy < 2; ++copy) {
      for (size_t b = 1; b < g.root.buffers.size(); ++b) twice.buffers.push_back(g.root.buffers[b]);
    }
    if (!g.root.children.empty()) {
      // The validity child twice over: a bool array of 2n rows.
      auto v = decode(g.root.children[0], format::DType::make_bool(false), n);
      REQUIRE(v.ok());
      std::vector<bool> bits;
      for (int copy = 0; copy < 2; ++copy) {
        for (uint64_t i = 0; i < n; ++i) bits.push_back((*v)->is_valid(i) && bools_of(**v)[i]);
      }
      twice.children = {bool_node(bits)};
    }
    const auto once = expected_rows(g.expected);
    auto want = once;
    want.insert(want.end(), once.begin(), once.end());
    auto full = decode(twice, t, 2 * n);
    REQUIRE(full.ok());
    CHECK(rows_of(**full) == want);
    format::DecodeContext ctx;
    auto second = ctx.decode_slice(twice, t, 2 * n, {n - 3, n + 9000});
    REQUIRE(second.ok());
    CHECK(rows_of(**second) == slice_rows(want, n - 3, n + 9000));
    format::DecodeContext take_ctx;
    const std::vector<uint64_t> rows = {1, n - 1, n, n + 8200, 2 * n - 1};
    auto taken = take_ctx.decode_take(twice, t, 2 * n, rows);
    REQUIRE(taken.ok());
    std::vector<std::string> expect;
    for (uint64_t r : rows) expect.push_back(want[r]);
    CHECK(rows_of(**taken) == expect);
  }
}

TEST_CASE("vortex.pco: hostile metadata and pages are corrupt, never a crash", "[format][pco]") {
  const auto g = alp_golden::load("pco_i64_mult_nulls");
  const uint64_t n = g.expected.rows;
  const auto t = alp_golden::dtype_of(g.expected);
  auto expect_error = [&](const ArrayView& bad, Errc code, const char* words) {
    auto r = decode(bad, t, n);
    REQUIRE_FALSE(r.ok());
    INFO(r.error().to_string());
    CHECK(r.error().code() == code);
    CHECK(r.error().to_string().find(words) != std::string::npos);
  };
  SECTION("a page buffer missing") {
    ArrayView bad = g.root;
    bad.buffers.pop_back();
    expect_error(bad, Errc::corrupt, "buffers");
  }
  SECTION("a buffer too many") {
    ArrayView bad = g.root;
    bad.buffers.push_back(bad.buffers.back());
    expect_error(bad, Errc::corrupt, "buffers");
  }
  SECTION("pages that hold more values than there are valid rows") {
    ArrayView bad = g.root;
    pb::PcoMetadata m = metadata_of(bad);
    m.mutable_chunks(0)->mutable_pages(0)->set_n_values(m.chunks(0).pages(0).n_values() + 1);
    set_metadata(bad, m);
    expect_error(bad, Errc::corrupt, "valid rows");
  }
  SECTION("no header") {
    ArrayView bad = g.root;
    pb::PcoMetadata m = metadata_of(bad);
    m.clear_header();
    set_metadata(bad, m);
    auto r = decode(bad, t, n);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code() == Errc::corrupt);
  }
  SECTION("a header from a future pcodec") {
    ArrayView bad = g.root;
    pb::PcoMetadata m = metadata_of(bad);
    m.set_header(std::string("\x09\x00", 2));
    set_metadata(bad, m);
    auto r = decode(bad, t, n);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code() == Errc::unsupported);
  }
  SECTION("8-bit values under vortex.pco (only vortex.pco.v2 holds them)") {
    auto r = decode(g.root, format::DType::make_primitive(PType::i8, true), n);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code() == Errc::corrupt);
    CHECK(r.error().to_string().find("vortex.pco.v2") != std::string::npos);
  }
  SECTION("a non-numeric dtype") {
    auto r = decode(g.root, format::DType::make_utf8(true), n);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code() == Errc::corrupt);
  }
  SECTION("pages cut short or overwritten decode to an error") {
    std::mt19937_64 rng(3);
    for (int trial = 0; trial < 200; ++trial) {
      ArrayView bad = g.root;
      const size_t b = 1 + rng() % (bad.buffers.size() - 1);
      std::string bytes(reinterpret_cast<const char*>(bad.buffers[b].data()),
                        bad.buffers[b].size());
      if (trial % 2 == 0) {
        bytes.resize(rng() % bytes.size());
      } else {
        for (int k = 0; k < 8; ++k) bytes[rng() % bytes.size()] = static_cast<char>(rng());
      }
      bad.buffers[b] = bytes_of(bytes);
      auto r = decode(bad, t, n);  // flipped bytes may still decode: no crash, no overrun (ASan)
      if (trial % 2 == 0) {
        REQUIRE_FALSE(r.ok());
        CHECK(r.error().code() == Errc::corrupt);
      }
    }
  }
}
