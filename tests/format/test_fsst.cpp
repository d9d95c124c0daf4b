// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>
#include <random>

#include "format/encodings/fsst.hpp"
#include "format/proto/fsst.pb.h"
#include "format/proto/varbin.pb.h"
#include "tests/format/fixtures.hpp"
#include "tests/format/strings_golden.hpp"

using namespace oc;
using namespace oc::test;
namespace fsst = oc::format::fsst;

namespace {

std::string fsst_meta(PType lengths, PType offsets) {
  pb::FsstMetadata m;
  m.set_uncompressed_lengths_ptype(static_cast<uint32_t>(lengths));
  m.set_codes_offsets_ptype(static_cast<uint32_t>(offsets));
  return m.SerializeAsString();
}

// Symbols "ab" (code 0), "hello" (code 1) and "x" (code 2).
const std::vector<uint64_t> kSymbols = {0x6261, 0x6f6c6c6568, 0x78};
const std::vector<uint8_t> kLengths = {2, 5, 1};

// An FSST node over kSymbols with rows compressed to @p codes (concatenated at @p offsets).
ArrayView fsst_node(const std::vector<uint8_t>& codes, const std::vector<uint32_t>& offsets,
                    const std::vector<uint32_t>& lengths) {
  return node("vortex.fsst", fsst_meta(PType::u32, PType::u32),
              {buffer_of(kSymbols), buffer_of(kLengths), buffer_of(codes)},
              {primitive_node(lengths), primitive_node(offsets)});
}

}  // namespace

TEST_CASE("vortex.fsst golden segments decode like the oracle", "[format][fsst]") {
  auto g = strings_golden::check("fsst_utf8", DType::make_utf8(true));
  // FSST writes the layout asked for, with no conversion after.
  CHECK(strings_golden::decode_as(g, DType::make_utf8(true), format::StringLayout::views)
            ->string_views);
  CHECK_FALSE(strings_golden::decode_as(g, DType::make_utf8(true), format::StringLayout::offsets)
                  ->string_views);
  strings_golden::check("fsst_binary", DType::make_binary(false));
  // The case is meant to exercise escapes: rare characters the symbol table does not cover.
  const Buffer& codes = g.root.buffers.at(2);
  size_t escapes = 0;
  for (size_t i = 0; i < codes.size(); ++i) {
    if (codes.data()[i] != fsst::kEscapeCode) continue;
    ++escapes;
    ++i;  // skip the escaped literal
  }
  CHECK(escapes > 0);
}

TEST_CASE("vortex.fsst accepts the legacy two-buffer form", "[format][fsst]") {
  // Rebuild the oracle's array the way older writers laid it out: the codes as a vortex.varbin
  // child (bytes + offsets + validity) ahead of the uncompressed lengths.
  auto g = strings_golden::load("fsst_utf8");
  const ArrayView& cur = g.root;
  REQUIRE(cur.buffers.size() == 3);
  REQUIRE(cur.children.size() == 3);
  auto meta = format::parse_metadata<pb::FsstMetadata>(cur.metadata, "fsst");
  REQUIRE(meta.ok());
  pb::VarBinMetadata codes_meta;
  codes_meta.set_offsets_ptype(meta->codes_offsets_ptype());
  ArrayView codes = node("vortex.varbin", codes_meta.SerializeAsString(), {cur.buffers[2]},
                         {cur.children[1], cur.children[2]});
  pb::FsstMetadata legacy_meta;
  legacy_meta.set_uncompressed_lengths_ptype(meta->uncompressed_lengths_ptype());
  ArrayView legacy = node("vortex.fsst", legacy_meta.SerializeAsString(),
                          {cur.buffers[0], cur.buffers[1]}, {codes, cur.children[0]});
  auto c = decode(legacy, DType::make_utf8(true), g.rows.size());
  if (!c.ok()) FAIL(c.error().to_string());
  for (uint64_t i = 0; i < g.rows.size(); ++i) {
    INFO("row " << i);
    REQUIRE(strings_golden::row_of(**c, i) == g.rows[i]);
  }
}

TEST_CASE("vortex.fsst metadata matches the upstream golden bytes", "[format][fsst]") {
  // encodings/fsst/goldenfiles/fsst.metadata in vortex-data/vortex.
  const std::string golden = "\x08\x03\x10\x06";
  auto m = format::parse_metadata<pb::FsstMetadata>(
      {reinterpret_cast<const uint8_t*>(golden.data()), golden.size()}, "fsst");
  REQUIRE(m.ok());
  CHECK(m->uncompressed_lengths_ptype() == static_cast<uint32_t>(PType::u64));
  CHECK(m->codes_offsets_ptype() == static_cast<uint32_t>(PType::i32));
}

TEST_CASE("fsst::decompress emits symbols and escaped literals", "[format][fsst]") {
  const std::vector<uint8_t> codes = {1, 255, ' ', 0, 2, 255, 255};
  std::string out(16, '\0');
  auto r = fsst::decompress(kSymbols.data(), kLengths.data(), kSymbols.size(), codes.data(),
                            codes.size(), reinterpret_cast<uint8_t*>(out.data()), out.size());
  REQUIRE(r.status == fsst::DecodeStatus::ok);
  CHECK(out.substr(0, r.written) == "hello abx\xff");

  const std::vector<uint8_t> unknown = {0, 3};
  r = fsst::decompress(kSymbols.data(), kLengths.data(), kSymbols.size(), unknown.data(),
                       unknown.size(), reinterpret_cast<uint8_t*>(out.data()), out.size());
  CHECK(r.status == fsst::DecodeStatus::unknown_code);
  CHECK(r.written == 2);

  const std::vector<uint8_t> dangling = {2, 255};
  r = fsst::decompress(kSymbols.data(), kLengths.data(), kSymbols.size(), dangling.data(),
                       dangling.size(), reinterpret_cast<uint8_t*>(out.data()), out.size());
  CHECK(r.status == fsst::DecodeStatus::dangling_escape);

  const std::vector<uint8_t> long_codes = {1, 1, 1, 1};
  r = fsst::decompress(kSymbols.data(), kLengths.data(), kSymbols.size(), long_codes.data(),
                       long_codes.size(), reinterpret_cast<uint8_t*>(out.data()), 12);
  CHECK(r.status == fsst::DecodeStatus::output_overflow);
  CHECK(r.written == 10);

  // With room to store whole words past the capacity (the unchecked path), the same outcomes.
  std::string roomy(64, '\0');
  auto* o = reinterpret_cast<uint8_t*>(roomy.data());
  r = fsst::decompress(kSymbols.data(), kLengths.data(), kSymbols.size(), long_codes.data(),
                       long_codes.size(), o, 12, roomy.size());
  CHECK(r.status == fsst::DecodeStatus::output_overflow);
  CHECK(r.written == 10);
  r = fsst::decompress(kSymbols.data(), kLengths.data(), kSymbols.size(), long_codes.data(),
                       long_codes.size(), o, 20, roomy.size());
  CHECK(r.status == fsst::DecodeStatus::ok);
  CHECK(roomy.substr(0, r.written) == "hellohellohellohello");
  r = fsst::decompress(kSymbols.data(), kLengths.data(), kSymbols.size(), codes.data(),
                       codes.size(), o, 16, roomy.size());
  REQUIRE(r.status == fsst::DecodeStatus::ok);
  CHECK(roomy.substr(0, r.written) == "hello abx\xff");
  r = fsst::decompress(kSymbols.data(), kLengths.data(), kSymbols.size(), unknown.data(),
                       unknown.size(), o, 16, roomy.size());
  CHECK(r.status == fsst::DecodeStatus::unknown_code);
  CHECK(r.written == 2);
}

TEST_CASE("vortex.fsst decodes hand-built rows", "[format][fsst]") {
  // "hello", "", "ab!x" with '!' escaped.
  auto n = fsst_node({1, 0, 255, '!', 2}, {0, 1, 1, 5}, {5, 0, 4});
  auto c = decode(n, DType::make_utf8(false), 3);
  REQUIRE(c.ok());
  CHECK(strings_of(**c) == std::vector<std::string>{"hello", "", "ab!x"});

  auto empty = fsst_node({}, {0}, {});
  c = decode(empty, DType::make_binary(false), 0);
  REQUIRE(c.ok());
  CHECK((*c)->length == 0);
}

TEST_CASE("vortex.fsst rejects inconsistent rows", "[format][fsst]") {
  const auto t = DType::make_utf8(false);
  // Declared length differs from what the codes produce, both ways.
  CHECK(decode(fsst_node({1}, {0, 1}, {4}), t, 1).error().code() == Errc::corrupt);
  CHECK(decode(fsst_node({1}, {0, 1}, {6}), t, 1).error().code() == Errc::corrupt);
  // Code 3 has no symbol; an escape ends the row.
  CHECK(decode(fsst_node({3}, {0, 1}, {1}), t, 1).error().code() == Errc::corrupt);
  CHECK(decode(fsst_node({255}, {0, 1}, {1}), t, 1).error().code() == Errc::corrupt);
  // Offsets past the codes, or decreasing.
  CHECK(decode(fsst_node({1}, {0, 2}, {5}), t, 1).error().code() == Errc::corrupt);
  CHECK(decode(fsst_node({1, 1}, {0, 2, 1}, {10, 0}), t, 2).error().code() == Errc::corrupt);
}

TEST_CASE("vortex.fsst rejects malformed symbol tables", "[format][fsst]") {
  const auto t = DType::make_utf8(false);
  auto n = fsst_node({2}, {0, 1}, {1});
  n.buffers[1] = buffer_of<uint8_t>({2, 5, 9});  // longer than 8 bytes
  CHECK(decode(n, t, 1).error().code() == Errc::corrupt);
  n.buffers[1] = buffer_of<uint8_t>({2, 0, 1});  // empty symbol
  CHECK(decode(n, t, 1).error().code() == Errc::corrupt);
  n.buffers[1] = buffer_of<uint8_t>({2, 5});  // fewer lengths than symbols
  CHECK(decode(n, t, 1).error().code() == Errc::corrupt);
  n.buffers[0] = Buffer::copy_of(std::vector<uint8_t>(256 * 8));  // 256 symbols
  n.buffers[1] = Buffer::copy_of(std::vector<uint8_t>(256, 1));
  CHECK(decode(n, t, 1).error().code() == Errc::corrupt);
  n.buffers[0] = buffer_of<uint8_t>({1, 2, 3});  // not whole u64s
  CHECK(decode(n, t, 1).error().code() == Errc::corrupt);
  n.buffers.pop_back();
  n.buffers.pop_back();
  CHECK(decode(n, t, 1).error().code() == Errc::corrupt);  // one buffer
}

TEST_CASE("legacy vortex.fsst needs a vortex.varbin codes child, as vortex-data does",
          "[format][fsst]") {
  // Codes "hello" (code 1) and "ab" (code 0) as a varbin child, then the lengths.
  pb::VarBinMetadata codes_meta;
  codes_meta.set_offsets_ptype(static_cast<uint32_t>(PType::u32));
  const ArrayView varbin =
      node("vortex.varbin", codes_meta.SerializeAsString(), {buffer_of<uint8_t>({1, 0})},
           {primitive_node<uint32_t>({0, 1, 2})});
  pb::FsstMetadata meta;
  meta.set_uncompressed_lengths_ptype(static_cast<uint32_t>(PType::u32));
  auto legacy =
      node("vortex.fsst", meta.SerializeAsString(), {buffer_of(kSymbols), buffer_of(kLengths)},
           {varbin, primitive_node<uint32_t>({5, 2})});
  const auto t = DType::make_utf8(false);
  auto c = decode(legacy, t, 2);
  REQUIRE(c.ok());
  CHECK(strings_of(**c) == std::vector<std::string>{"hello", "ab"});

  // The same codes as views (or any other binary encoding) are refused, decoded or taken.
  std::vector<uint8_t> views(32, 0);
  views[0] = 1;
  views[4] = 1;
  views[16] = 1;
  views[20] = 0;
  legacy.children[0] = node("vortex.varbinview", {}, {Buffer::copy_of(views)});
  auto r = decode(legacy, t, 2);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code() == Errc::corrupt);
  CHECK(r.error().to_string().find("vortex.varbinview codes child") != std::string::npos);
  format::DecodeContext ctx;
  auto taken = ctx.decode_take(legacy, t, 2, std::vector<uint64_t>{1});
  REQUIRE_FALSE(taken.ok());
  CHECK(taken.error().code() == Errc::corrupt);
}

namespace {

// Random FSST rows for the block decoder: a table of 40 random symbols of 1..8 bytes, rows of
// 0..40 codes mixing symbols and escaped literals (255 among them), some null, and a few rows of
// more codes than one block pass covers. `want` is each row's text by a scalar loop.
struct RandomFsst {
  std::vector<uint64_t> symbols;
  std::vector<uint8_t> symbol_lengths;
  std::vector<uint8_t> codes;
  std::vector<uint32_t> offsets{0}, lengths;
  std::vector<bool> valid;
  std::vector<std::string> want;

  RandomFsst(uint64_t rows, uint32_t seed) {
    std::mt19937 rng(seed);
    for (int k = 0; k < 40; ++k) {
      symbol_lengths.push_back(static_cast<uint8_t>(1 + rng() % 8));
      symbols.push_back((uint64_t{rng()} << 32 | rng()) >> (64 - 8 * symbol_lengths.back()));
    }
    for (uint64_t i = 0; i < rows; ++i) {
      std::string text;
      valid.push_back(rng() % 7 != 0);
      const uint64_t n = !valid.back() ? 0 : i % 997 == 3 ? 20000 : rng() % 41;
      for (uint64_t j = 0; j < n; ++j) {
        if (rng() % 6 == 0) {
          const auto literal = static_cast<uint8_t>(rng() % 3 == 0 ? 255 : rng());
          codes.insert(codes.end(), {fsst::kEscapeCode, literal});
          text.push_back(static_cast<char>(literal));
        } else {
          const uint8_t code = rng() % symbols.size();
          codes.push_back(code);
          for (uint8_t b = 0; b < symbol_lengths[code]; ++b)
            text.push_back(static_cast<char>(symbols[code] >> (8 * b)));
        }
      }
      offsets.push_back(static_cast<uint32_t>(codes.size()));
      lengths.push_back(static_cast<uint32_t>(text.size()));
      want.push_back(text);
    }
  }

  ArrayView node() const {
    return oc::test::node("vortex.fsst", fsst_meta(PType::u32, PType::u32),
                          {buffer_of(symbols), buffer_of(symbol_lengths), buffer_of(codes)},
                          {primitive_node(lengths), primitive_node(offsets), bool_node(valid)});
  }
};

Result<ColumnPtr> decode_in(const ArrayView& n, uint64_t len, format::StringLayout layout) {
  format::DecodeContext ctx;
  ctx.prefer_strings(layout);
  return ctx.decode(n, DType::make_binary(true), len);
}

}  // namespace

TEST_CASE("vortex.fsst decodes blocks of rows like a scalar loop", "[format][fsst]") {
  for (const uint64_t rows : {uint64_t{1}, uint64_t{255}, uint64_t{257}, uint64_t{20000 + 37}}) {
    const RandomFsst f(rows, static_cast<uint32_t>(rows));
    for (const auto layout : {format::StringLayout::views, format::StringLayout::offsets}) {
      INFO(rows << " rows, views " << (layout == format::StringLayout::views));
      auto c = decode_in(f.node(), rows, layout);
      if (!c.ok()) FAIL(c.error().to_string());
      CHECK(strings_of(**c) == f.want);
      for (uint64_t i = 0; i < rows; ++i) REQUIRE((*c)->is_valid(i) == f.valid[i]);
    }
    // A take decodes codes that do not lie back to back: every other row.
    std::vector<uint64_t> picked;
    for (uint64_t i = 0; i < rows; i += 2) picked.push_back(i);
    format::DecodeContext ctx;
    auto t = ctx.decode_take(f.node(), DType::make_binary(true), rows, picked);
    if (!t.ok()) FAIL(t.error().to_string());
    for (uint64_t k = 0; k < picked.size(); ++k)
      REQUIRE(std::string(format::string_at(**t, k)) == f.want[picked[k]]);
  }
}

TEST_CASE("vortex.fsst blocks report the row a scalar loop would", "[format][fsst]") {
  // Rows of two codes: "ab", then an escaped 'q'; the same codes and total length whichever way
  // the rows are cut, so only the checks at each row's end can tell.
  const uint64_t rows = 600;
  std::vector<uint8_t> codes;
  std::vector<uint32_t> offsets{0}, lengths;
  for (uint64_t i = 0; i < rows; ++i) {
    codes.insert(codes.end(), {0, 255, 'q'});
    offsets.push_back(static_cast<uint32_t>(codes.size()));
    lengths.push_back(3);
  }
  const auto t = DType::make_utf8(false);
  auto ok = decode(fsst_node(codes, offsets, lengths), t, rows);
  REQUIRE(ok.ok());
  CHECK(strings_of(**ok)[rows - 1] == "abq");

  // Row 300 one byte longer, row 301 one shorter.
  auto swapped = lengths;
  ++swapped[300];
  --swapped[301];
  auto r = decode(fsst_node(codes, offsets, swapped), t, rows);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().to_string().find("fsst row 300 ") != std::string::npos);

  // Row 300 cut after its escape (its literal opens row 301), lengths still adding up.
  auto cut = offsets;
  --cut[301];
  auto cut_lengths = lengths;
  --cut_lengths[300];
  ++cut_lengths[301];
  r = decode(fsst_node(codes, cut, cut_lengths), t, rows);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().to_string().find("fsst row 300 stops after 2 of its 2 bytes: an escape code at "
                                   "the end") != std::string::npos);

  // The same at the first row, where nothing else tells the escaped literal from a code.
  r = decode(fsst_node({255, 'q', 0}, {0, 1, 3}, {0, 3}), t, 2);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().to_string().find("fsst row 0 stops") != std::string::npos);
}
