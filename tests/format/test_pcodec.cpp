// SPDX-License-Identifier: Apache-2.0
// format/pcodec: goldens written by pcodec 0.3.4 (pco 0.4.4, format 3) and 1.0.1 (format 4.1)
// plus two hand-made ones (tests/format/golden/make_pco_golden.py), then hostile chunk metas
// and pages, built bit by bit here, each of which must be `corrupt` (or `unsupported`) and
// never crash. The full type x mode x delta matrix runs against pcodec itself in
// tests/interop/test_pcodec_oracle.py.
#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "format/pcodec/pcodec.hpp"

namespace pco = oc::format::pcodec;
using Bytes = std::vector<uint8_t>;

namespace {

Bytes read_bytes(const std::string& name) {
  const auto p = std::filesystem::path(OC_SOURCE_DIR) / "tests/format/golden/pco" / name;
  std::ifstream in(p, std::ios::binary);
  REQUIRE(in.good());
  return Bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

struct Page {
  uint32_t n = 0;
  Bytes bytes;
};
struct Chunk {
  Bytes meta;
  std::vector<Page> pages;
};
struct Golden {
  pco::Number number = pco::Number::u8;
  Bytes header;
  std::vector<Chunk> chunks;
  Bytes expected;
};

// The container of tests/format/pco_decode_main.cpp.
Golden load(const std::string& name) {
  const Bytes b = read_bytes(name + ".pcod");
  size_t pos = 4;
  REQUIRE(b.size() >= 8);
  REQUIRE(std::memcmp(b.data(), "PCOD", 4) == 0);
  auto u32 = [&] {
    REQUIRE(pos + 4 <= b.size());
    uint32_t v;
    std::memcpy(&v, b.data() + pos, 4);
    pos += 4;
    return v;
  };
  auto blob = [&] {
    const uint32_t n = u32();
    REQUIRE(pos + n <= b.size());
    Bytes out(b.begin() + static_cast<long>(pos), b.begin() + static_cast<long>(pos + n));
    pos += n;
    return out;
  };
  Golden g;
  g.number = static_cast<pco::Number>(u32());
  g.header = blob();
  const uint32_t n_chunks = u32();
  for (uint32_t c = 0; c < n_chunks; ++c) {
    Chunk chunk;
    chunk.meta = blob();
    const uint32_t n_pages = u32();
    for (uint32_t p = 0; p < n_pages; ++p) {
      Page page;
      page.n = u32();
      page.bytes = blob();
      chunk.pages.push_back(std::move(page));
    }
    g.chunks.push_back(std::move(chunk));
  }
  g.expected = read_bytes(name + ".expected");
  return g;
}

oc::Result<Bytes> decode(const Golden& g) {
  OC_ASSIGN_OR_RETURN(auto v, pco::parse_wrapped_header(g.header));
  Bytes out;
  for (const Chunk& c : g.chunks) {
    OC_ASSIGN_OR_RETURN(auto cd, pco::ChunkDecoder::parse(v, g.number, c.meta));
    for (const Page& p : c.pages) {
      const size_t at = out.size();
      out.resize(at + p.n * pco::width(g.number));
      OC_TRY(cd.decode_page(p.bytes, p.n, out.data() + at));
    }
  }
  return out;
}

// LSB-first bit packing, as pcodec writes.
class BitWriter {
 public:
  BitWriter& put(uint64_t v, uint32_t n) {
    for (uint32_t i = 0; i < n; ++i) bits_.push_back(static_cast<uint8_t>((v >> i) & 1));
    return *this;
  }
  Bytes bytes() const {
    Bytes out((bits_.size() + 7) / 8, 0);
    for (size_t i = 0; i < bits_.size(); ++i)
      out[i / 8] |= static_cast<uint8_t>(bits_[i] << (i % 8));
    return out;
  }

 private:
  std::vector<uint8_t> bits_;
};

constexpr pco::FormatVersion kV41{4, 1};

// One latent variable's header and bins: {weight, lower, offset_bits} each.
struct TestBin {
  uint64_t weight, lower, offset_bits;
};
void put_var(BitWriter& w, uint32_t bits, uint32_t ans_size_log, std::vector<TestBin> bins,
             std::optional<uint32_t> n_bins = std::nullopt) {
  w.put(ans_size_log, 4).put(n_bins.value_or(static_cast<uint32_t>(bins.size())), 15);
  const uint32_t ob_bits = bits == 8 ? 4 : bits == 16 ? 5 : bits == 32 ? 6 : 7;
  for (const TestBin& b : bins)
    w.put(b.weight - 1, ans_size_log).put(b.lower, bits).put(b.offset_bits, ob_bits);
}

// u32, Classic, no delta, one variable.
Bytes classic_u32_meta(uint32_t ans_size_log, std::vector<TestBin> bins,
                       std::optional<uint32_t> n_bins = std::nullopt) {
  BitWriter w;
  w.put(0, 4).put(0, 4);
  put_var(w, 32, ans_size_log, std::move(bins), n_bins);
  return w.bytes();
}

oc::Errc parse_error(const Bytes& meta, pco::Number n = pco::Number::u32,
                     pco::FormatVersion v = kV41) {
  auto r = pco::ChunkDecoder::parse(v, n, meta);
  REQUIRE_FALSE(r.ok());
  return r.error().code();
}

oc::Errc page_error(const Bytes& meta, const Bytes& page, uint32_t n_values,
                    pco::Number n = pco::Number::u32) {
  auto cd = pco::ChunkDecoder::parse(kV41, n, meta);
  REQUIRE(cd.ok());
  Bytes out(size_t{n_values} * pco::width(n));
  auto r = cd->decode_page(page, n_values, out.data());
  REQUIRE_FALSE(r.ok());
  return r.error().code();
}

const char* kGoldens[] = {
    "v3_f64_classic",
    "v3_i64_int_mult_consecutive",
    "v3_f32_float_mult_consecutive2",
    "v3_f32_float_quant",
    "v3_u16_lookback",
    "v3_i32_pages",
    "v3_f16_classic",
    "v41_u8_dict_consecutive2",
    "v41_i16_conv1",
    "v41_f16_float_mult",
    "v41_f64_lookback",
    "v41_i8_extremes",
    "hand_u32_int_mult_consecutive2_secondary",
    "hand_f32_float_quant_lookback_secondary",
};

}  // namespace

TEST_CASE("pcodec goldens of formats 3 and 4.1 decode to their values", "[format][pcodec]") {
  for (const char* name : kGoldens) {
    INFO(name);
    const Golden g = load(name);
    auto v = pco::parse_wrapped_header(g.header);
    REQUIRE(v.ok());
    CHECK(v->major == (std::string(name).starts_with("v3_") ? 3 : 4));
    auto out = decode(g);
    REQUIRE(out.ok());
    CHECK(*out == g.expected);
  }
}

TEST_CASE("pcodec goldens name the mode and delta encoding they were forced to",
          "[format][pcodec]") {
  auto describe = [](const char* name) {
    const Golden g = load(name);
    auto cd =
        pco::ChunkDecoder::parse(*pco::parse_wrapped_header(g.header), g.number, g.chunks[0].meta);
    REQUIRE(cd.ok());
    CHECK(cd->meta_size() == g.chunks[0].meta.size());
    return cd->describe();
  };
  CHECK(describe("v3_i64_int_mult_consecutive") ==
        "int_mult(base=0x3e8) consecutive(order=1,secondary=0)");
  CHECK(describe("v3_u16_lookback").starts_with("classic lookback("));
  CHECK(describe("v3_f32_float_quant") == "float_quant(k=8) none");
  CHECK(describe("v41_u8_dict_consecutive2").starts_with("dict(n="));
  CHECK(describe("v41_i16_conv1").starts_with("classic conv1(order=3,"));
  CHECK(describe("hand_f32_float_quant_lookback_secondary") ==
        "float_quant(k=4) lookback(window_log=4,state_log=1,secondary=1)");
}

TEST_CASE("pcodec headers: 1 byte up to format 3, 2 from 4", "[format][pcodec]") {
  auto parse = [](Bytes b) { return pco::parse_wrapped_header(b); };
  CHECK(parse({3})->major == 3);
  CHECK(parse({3, 99})->minor == 0);  // format 3 has no minor byte; the rest is not the header's
  CHECK(parse({4, 1})->minor == 1);
  CHECK(parse({4, 7})->minor == 7);  // pcodec tries newer minor versions too
  CHECK(parse({}).error().code() == oc::Errc::corrupt);
  CHECK(parse({4}).error().code() == oc::Errc::corrupt);
  CHECK(parse({5, 0}).error().code() == oc::Errc::unsupported);
}

TEST_CASE("pcodec: every truncation of a golden's meta or page is corrupt", "[format][pcodec]") {
  for (const char* name : kGoldens) {
    INFO(name);
    const Golden g = load(name);
    const auto v = *pco::parse_wrapped_header(g.header);
    const Bytes& meta = g.chunks[0].meta;
    for (size_t len = 0; len < meta.size(); ++len) {
      INFO("meta prefix " << len);
      auto r = pco::ChunkDecoder::parse(v, g.number, std::span(meta.data(), len));
      REQUIRE_FALSE(r.ok());
      CHECK(r.error().code() == oc::Errc::corrupt);
    }
    auto cd = pco::ChunkDecoder::parse(v, g.number, meta);
    REQUIRE(cd.ok());
    const Page& page = g.chunks[0].pages.back();
    Bytes out(page.n * pco::width(g.number));
    for (size_t len = 0; len < page.bytes.size(); ++len) {
      INFO("page prefix " << len);
      auto r = cd->decode_page(std::span(page.bytes.data(), len), page.n, out.data());
      REQUIRE_FALSE(r.ok());
      CHECK(r.error().code() == oc::Errc::corrupt);
    }
  }
}

TEST_CASE("pcodec: trailing bytes after a meta or a page are ignored, as pcodec does",
          "[format][pcodec]") {
  const Golden g = load("v3_i64_int_mult_consecutive");
  Golden longer = g;
  for (Chunk& c : longer.chunks) {
    c.meta.push_back(0xff);
    for (Page& p : c.pages) p.bytes.push_back(0xff);
  }
  auto out = decode(longer);
  REQUIRE(out.ok());
  CHECK(*out == g.expected);
}

TEST_CASE("pcodec: hostile chunk metas are corrupt", "[format][pcodec]") {
  using oc::Errc;
  // A sound baseline: two bins of weight 1 in a table of 2.
  CHECK(
      pco::ChunkDecoder::parse(kV41, pco::Number::u32, classic_u32_meta(1, {{1, 0, 0}, {1, 5, 3}}))
          .ok());
  SECTION("ANS size log above 14") {
    CHECK(parse_error(classic_u32_meta(15, {})) == Errc::corrupt);
  }
  SECTION("more bins than table states") {
    CHECK(parse_error(classic_u32_meta(1, {{1, 0, 0}, {1, 1, 0}, {1, 2, 0}})) == Errc::corrupt);
  }
  SECTION("one bin with a nonzero ANS size log") {
    CHECK(parse_error(classic_u32_meta(2, {{4, 0, 0}})) == Errc::corrupt);
  }
  SECTION("weights not summing to the table size") {
    CHECK(parse_error(classic_u32_meta(2, {{1, 0, 0}, {1, 1, 0}})) == Errc::corrupt);
    CHECK(parse_error(classic_u32_meta(2, {{3, 0, 0}, {3, 1, 0}})) == Errc::corrupt);
    CHECK(parse_error(classic_u32_meta(3, {})) == Errc::corrupt);  // no bins: a table of 1
  }
  SECTION("offset bits wider than the latent") {
    CHECK(parse_error(classic_u32_meta(0, {{1, 0, 33}})) == Errc::corrupt);
  }
  SECTION("bin count promising more bins than the bytes hold") {
    CHECK(parse_error(classic_u32_meta(14, {{1, 0, 0}}, 16000)) == Errc::corrupt);
  }
  SECTION("nonzero bits after the meta's last field") {
    Bytes m = classic_u32_meta(0, {{1, 7, 0}});
    m.back() |= 0x80;
    CHECK(parse_error(m) == Errc::corrupt);
  }
  SECTION("unknown mode and delta variants") {
    CHECK(parse_error(BitWriter().put(9, 4).put(0, 4).bytes()) == Errc::corrupt);
    CHECK(parse_error(BitWriter().put(0, 4).put(6, 4).bytes()) == Errc::corrupt);
    // a newer 4.x may add variants: unsupported, not corrupt
    CHECK(parse_error(BitWriter().put(9, 4).put(0, 4).bytes(), pco::Number::u32, {4, 2}) ==
          Errc::unsupported);
  }
  SECTION("modes invalid for the number type") {
    BitWriter int_mult0;
    int_mult0.put(1, 4).put(0, 32).put(0, 4);  // IntMult base 0
    put_var(int_mult0, 32, 0, {{1, 0, 0}});
    put_var(int_mult0, 32, 0, {{1, 0, 0}});
    CHECK(parse_error(int_mult0.bytes()) == Errc::corrupt);
    CHECK(parse_error(int_mult0.bytes(), pco::Number::f32) == Errc::corrupt);
    BitWriter quant;
    quant.put(3, 4).put(24, 8).put(0, 4);  // FloatQuant k 24 > 23 mantissa bits
    put_var(quant, 32, 0, {{1, 0, 0}});
    put_var(quant, 32, 0, {{1, 0, 0}});
    CHECK(parse_error(quant.bytes(), pco::Number::f32) == Errc::corrupt);
    CHECK(parse_error(quant.bytes(), pco::Number::i32) == Errc::corrupt);
    BitWriter inf_base;
    inf_base.put(2, 4).put(0xff80'0000u, 32).put(0, 4);  // FloatMult base +inf (ordered)
    put_var(inf_base, 32, 0, {{1, 0, 0}});
    put_var(inf_base, 32, 0, {{1, 0, 0}});
    CHECK(parse_error(inf_base.bytes(), pco::Number::f32) == Errc::corrupt);
  }
  SECTION("a dict longer than its bytes is refused before allocating") {
    BitWriter w;
    w.put(4, 4).put((1u << 25) - 1, 25);
    CHECK(parse_error(w.bytes(), pco::Number::u64) == Errc::corrupt);
  }
  SECTION("delta encodings out of range") {
    CHECK(parse_error(BitWriter().put(0, 4).put(1, 4).put(0, 3).put(0, 1).bytes()) ==
          Errc::corrupt);  // consecutive order 0
    BitWriter lb;
    lb.put(0, 4).put(2, 4).put(3, 5).put(5, 4).put(0, 1);  // state log 5 > window log 4
    CHECK(parse_error(lb.bytes()) == Errc::corrupt);
    BitWriter lb_bin;
    lb_bin.put(0, 4).put(2, 4).put(3, 5).put(0, 4).put(0, 1);  // window 16
    put_var(lb_bin, 32, 0, {{1, 17, 0}});                      // lookback 17 > 16
    put_var(lb_bin, 32, 0, {{1, 0, 0}});
    CHECK(parse_error(lb_bin.bytes()) == Errc::corrupt);
    BitWriter big_window;
    big_window.put(0, 4).put(2, 4).put(31, 5).put(0, 4).put(0, 1);  // window 2^32
    CHECK(parse_error(big_window.bytes()) == Errc::corrupt);
    BitWriter conv64;
    conv64.put(0, 4).put(3, 4).put(0, 5).put(uint64_t{1} << 63, 64).put(0, 5).put(0x8000'0001u, 32);
    put_var(conv64, 64, 0, {{1, 0, 0}});
    CHECK(parse_error(conv64.bytes(), pco::Number::u64) == Errc::corrupt);  // Conv1 on 64 bits
    BitWriter conv_q;
    conv_q.put(0, 4)
        .put(3, 4)
        .put(16, 5)
        .put(uint64_t{1} << 63, 64)
        .put(0, 5)
        .put(0x8000'0001u, 32);
    put_var(conv_q, 8, 0, {{1, 0, 0}});
    CHECK(parse_error(conv_q.bytes(), pco::Number::u8) == Errc::corrupt);  // quantization > 15
    BitWriter conv_big;
    conv_big.put(0, 4)
        .put(3, 4)
        .put(0, 5)
        .put(uint64_t{1} << 63, 64)
        .put(0, 5)
        .put(0x8000'0000u + 200, 32);
    put_var(conv_big, 8, 0, {{1, 0, 0}});
    CHECK(parse_error(conv_big.bytes(), pco::Number::u8) == Errc::corrupt);  // 200 * 2^8 > i16
  }
  SECTION("format 0 IntMult is unsupported") {
    BitWriter w;
    w.put(1, 4).put(3, 32).put(0, 3);
    put_var(w, 32, 0, {{1, 0, 0}});
    put_var(w, 32, 0, {{1, 0, 0}});
    CHECK(parse_error(w.bytes(), pco::Number::u32, {0, 0}) == Errc::unsupported);
  }
}

TEST_CASE("pcodec: hostile pages are corrupt", "[format][pcodec]") {
  using oc::Errc;
  // Classic u32 with two bins (1 ANS bit per latent) and up to 4 offset bits.
  const Bytes meta = classic_u32_meta(1, {{1, 100, 0}, {1, 200, 4}});
  SECTION("a sound hand-made page decodes") {
    // Table of 2: state s is bin s, and each step reads one bit that becomes the next state.
    BitWriter page;
    page.put(0, 1).put(1, 1).put(1, 1).put(0, 1);  // initial states 0 1 1 0
    page.put(0, 4);                                // header padding
    page.put(0, 4);                                // the four tANS steps' bits
    page.put(5, 4).put(9, 4);                      // offsets of the two latents in bin 1
    auto cd = pco::ChunkDecoder::parse(kV41, pco::Number::u32, meta);
    REQUIRE(cd.ok());
    uint32_t out[4] = {};
    REQUIRE(cd->decode_page(page.bytes(), 4, reinterpret_cast<uint8_t*>(out)).ok());
    CHECK(out[0] == 100);
    CHECK(out[1] == 205);
    CHECK(out[2] == 209);
    CHECK(out[3] == 100);
  }
  SECTION("nonzero padding after the page header") {
    CHECK(page_error(meta, Bytes{0xf0, 0, 0, 0, 0, 0, 0, 0}, 4) == Errc::corrupt);
  }
  SECTION("more values than a page may hold") {
    CHECK(page_error(meta, Bytes(16, 0), pco::kMaxPageValues + 1) == Errc::corrupt);
  }
  SECTION("a variable without bins cannot supply latents") {
    CHECK(page_error(classic_u32_meta(0, {}), Bytes{0}, 1) == Errc::corrupt);
    // but zero values need none
    auto cd = pco::ChunkDecoder::parse(kV41, pco::Number::u32, classic_u32_meta(0, {}));
    REQUIRE(cd.ok());
    CHECK(cd->decode_page({}, 0, nullptr).ok());
  }
  SECTION("a dict index past the dict") {
    BitWriter m;
    m.put(4, 4).put(2, 25).put(0, 3);  // Dict of 2 values, then byte aligned
    m.put(10, 32).put(20, 32);
    m.put(0, 4);
    put_var(m, 32, 0, {{1, 2, 0}});  // every index is 2
    CHECK(page_error(m.bytes(), Bytes{0}, 1) == Errc::corrupt);
  }
  SECTION("a lookback outside its window") {
    BitWriter m;
    m.put(0, 4).put(2, 4).put(3, 5).put(0, 4).put(0, 1);  // window 16, state 1
    put_var(m, 32, 0, {{1, 16, 1}});                      // lookbacks 16 or 17
    put_var(m, 32, 0, {{1, 0, 0}});
    BitWriter page;
    page.put(0, 32);  // primary state
    page.put(1, 1);   // lookback offset 1: 17
    CHECK(page_error(m.bytes(), page.bytes(), 2) == Errc::corrupt);
  }
}
