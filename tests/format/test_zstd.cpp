// SPDX-License-Identifier: Apache-2.0
#include <zstd.h>

#include <catch2/catch.hpp>

#include "format/proto/zstd.pb.h"
#include "format/zstd_bound.hpp"
#include "tests/format/fixtures.hpp"
#include "tests/format/strings_golden.hpp"

using namespace oc;
using namespace oc::test;

namespace {

// Compresses @p raw into one zstd frame, with @p dict as a raw-content dictionary if not empty.
std::string compress(const std::string& raw, const std::string& dict = {}) {
  std::string out(ZSTD_compressBound(raw.size()), '\0');
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  const size_t n = ZSTD_compress_usingDict(cctx, out.data(), out.size(), raw.data(), raw.size(),
                                           dict.data(), dict.size(), 3);
  ZSTD_freeCCtx(cctx);
  REQUIRE_FALSE(ZSTD_isError(n));
  out.resize(n);
  return out;
}

// The length-prefixed stream vortex.zstd stores for @p values.
std::string string_stream(const std::vector<std::string>& values) {
  std::string out;
  for (const auto& v : values) {
    const auto size = static_cast<uint32_t>(v.size());
    out.append(reinterpret_cast<const char*>(&size), 4);
    out += v;
  }
  return out;
}

struct Frame {
  std::string raw;
  uint64_t n_values;
};

// A vortex.zstd node whose frames hold @p frames, compressed with @p dict when given.
ArrayView zstd_node(const std::vector<Frame>& frames, const std::string& dict = {}) {
  pb::ZstdMetadata m;
  m.set_dictionary_size(static_cast<uint32_t>(dict.size()));
  std::vector<Buffer> buffers;
  if (!dict.empty()) buffers.push_back(bytes_of(dict));
  for (const auto& f : frames) {
    auto* meta = m.add_frames();
    meta->set_uncompressed_size(f.raw.size());
    meta->set_n_values(f.n_values);
    buffers.push_back(bytes_of(compress(f.raw, dict)));
  }
  return node("vortex.zstd", m.SerializeAsString(), std::move(buffers));
}

void set_frame_size(ArrayView& n, int frame, uint64_t size) {
  pb::ZstdMetadata m;
  REQUIRE(m.ParseFromArray(n.metadata.data(), static_cast<int>(n.metadata.size())));
  m.mutable_frames(frame)->set_uncompressed_size(size);
  const std::string s = m.SerializeAsString();
  n.metadata.assign(s.begin(), s.end());
}

}  // namespace

TEST_CASE("vortex.zstd golden segments decode like the oracle", "[format][zstd]") {
  strings_golden::check("zstd_utf8_frames", DType::make_utf8(true));  // two frames, nulls
  strings_golden::check("zstd_binary", DType::make_binary(true));
}

TEST_CASE("vortex.zstd decodes primitives around nulls", "[format][zstd]") {
  const std::vector<int32_t> valid = {7, -8, 9};
  std::string first(reinterpret_cast<const char*>(valid.data()), 8);
  std::string second(reinterpret_cast<const char*>(valid.data()) + 8, 4);
  auto n = zstd_node({{first, 2}, {second, 1}});
  n.children.push_back(bool_node({true, false, true, false, true}));
  auto c = decode(n, DType::make_primitive(PType::i32, true), 5);
  REQUIRE(c.ok());
  CHECK(validity_of(**c) == std::vector<bool>{true, false, true, false, true});
  CHECK((*c)->null_count == 2);
  const auto values = values_of<int32_t>(**c);
  CHECK(values[0] == 7);
  CHECK(values[2] == -8);
  CHECK(values[4] == 9);

  // Older primitive-only files left n_values at 0.
  auto old = zstd_node({{first + second, 0}});
  c = decode(old, DType::make_primitive(PType::i32, false), 3);
  REQUIRE(c.ok());
  CHECK(values_of<int32_t>(**c) == valid);
}

TEST_CASE("vortex.zstd uses the shared dictionary", "[format][zstd]") {
  const std::string dict = "a shared prefix that every value repeats: ";
  const std::vector<std::string> values = {dict + "one", dict + "two", "", dict + "three"};
  auto n = zstd_node(
      {{string_stream({values[0], values[1]}), 2}, {string_stream({values[2], values[3]}), 2}},
      dict);
  auto c = decode(n, DType::make_utf8(false), 4);
  REQUIRE(c.ok());
  CHECK(strings_of(**c) == values);

  // The frames cannot be read without it.
  pb::ZstdMetadata m;
  REQUIRE(m.ParseFromArray(n.metadata.data(), static_cast<int>(n.metadata.size())));
  m.set_dictionary_size(0);
  const std::string without = m.SerializeAsString();
  n.metadata.assign(without.begin(), without.end());
  n.buffers.erase(n.buffers.begin());
  CHECK(decode(n, DType::make_utf8(false), 4).error().code() == Errc::corrupt);
}

TEST_CASE("vortex.zstd handles empty and all-null arrays", "[format][zstd]") {
  auto c = decode(zstd_node({}), DType::make_utf8(false), 0);
  REQUIRE(c.ok());
  CHECK((*c)->length == 0);

  auto all_null = zstd_node({});
  all_null.children.push_back(bool_node({false, false, false}));
  c = decode(all_null, DType::make_binary(true), 3);
  REQUIRE(c.ok());
  CHECK((*c)->null_count == 3);
  CHECK(strings_of(**c) == std::vector<std::string>{"", "", ""});
}

TEST_CASE("vortex.zstd checks declared sizes before and after inflating", "[format][zstd]") {
  const auto t = DType::make_utf8(false);
  const std::string raw = string_stream({"abc", "defg"});
  // A size its frame's bytes cannot inflate to (zstd_max_inflated: 32,768 times them at most)
  // is refused before anything is allocated, on a full decode and on a take.
  auto bomb = zstd_node({{raw, 2}});
  set_frame_size(bomb, 0, uint64_t{1} << 30);
  auto r = decode(bomb, t, 2);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code() == Errc::corrupt);
  CHECK(r.error().to_string().find("cannot inflate") != std::string::npos);
  const std::vector<uint64_t> row{1};
  format::DecodeContext ctx;
  auto taken = ctx.decode_take(bomb, t, 2, row);
  REQUIRE_FALSE(taken.ok());
  CHECK(taken.error().to_string().find("cannot inflate") != std::string::npos);
  // One the frame's bytes could hold but the decode limit does not allow: refused by the limit.
  bomb.buffers[0] = bytes_of(std::string(1 << 20, 'x'));
  set_frame_size(bomb, 0, uint64_t{1} << 34);
  r = decode(bomb, t, 2);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code() == Errc::corrupt);
  CHECK(r.error().to_string().find("limit") != std::string::npos);

  auto too_small = zstd_node({{raw, 2}});
  set_frame_size(too_small, 0, raw.size() - 1);
  CHECK(decode(too_small, t, 2).error().code() == Errc::corrupt);
  auto too_large = zstd_node({{raw, 2}});
  set_frame_size(too_large, 0, raw.size() + 1);
  CHECK(decode(too_large, t, 2).error().code() == Errc::corrupt);

  auto garbage = zstd_node({{raw, 2}});
  garbage.buffers[0] = bytes_of("not a zstd frame");
  CHECK(decode(garbage, t, 2).error().code() == Errc::corrupt);
}

TEST_CASE("vortex.zstd rejects streams that disagree with the rows", "[format][zstd]") {
  const auto t = DType::make_utf8(false);
  const std::string raw = string_stream({"abc", "defg"});
  CHECK(decode(zstd_node({{raw, 2}}), t, 3).error().code() == Errc::corrupt);  // too few values
  CHECK(decode(zstd_node({{raw, 2}}), t, 1).error().code() == Errc::corrupt);  // bytes left over
  std::string overrun = raw;
  overrun[0] = 100;  // the first length runs past the stream
  CHECK(decode(zstd_node({{overrun, 2}}), t, 2).error().code() == Errc::corrupt);
  CHECK(decode(zstd_node({{"abcde", 0}}), DType::make_primitive(PType::i32, false), 1)
            .error()
            .code() == Errc::corrupt);  // not a whole number of values

  auto missing_frame = zstd_node({{raw, 2}});
  missing_frame.buffers.clear();
  CHECK(decode(missing_frame, t, 2).error().code() == Errc::corrupt);
  auto short_dict = zstd_node({{raw, 2}}, "dictionary");
  short_dict.buffers[0] = bytes_of("dict");
  CHECK(decode(short_dict, t, 2).error().code() == Errc::corrupt);
  CHECK(decode(zstd_node({{raw, 2}}), DType::make_bool(false), 2).error().code() == Errc::corrupt);
}

namespace {

// decode_take of @p n equals a full decode then take, for several row sets.
void check_zstd_takes(const ArrayView& n, const DTypePtr& t, uint64_t len) {
  auto full = decode(n, t, len);
  REQUIRE(full.ok());
  std::vector<std::vector<uint64_t>> sets = {{0}, {len - 1}, {0, len - 1}};
  std::vector<uint64_t> all(len), odd;
  for (uint64_t i = 0; i < len; ++i) {
    all[i] = i;
    if (i % 2) odd.push_back(i);
  }
  sets.push_back(all);
  sets.push_back(odd);
  for (const auto& rows : sets) {
    INFO(rows.size() << " rows of " << len);
    format::DecodeContext ctx;
    auto got = ctx.decode_take(n, t, len, rows);
    REQUIRE(got.ok());
    auto want = format::take(*full, rows);
    REQUIRE(want.ok());
    CHECK(rows_of(**got) == rows_of(**want));
  }
}

}  // namespace

TEST_CASE("vortex.zstd takes inflate the frames of their rows", "[format][zstd][take]") {
  const std::string dict = "shared words shared words ";
  // Three frames of strings with nulls between: rows 0..8, nulls at 1, 4 and 7.
  const std::vector<std::string> values = {"alpha", "", "gamma delta", "epsilon", "z", "eta"};
  auto strings = zstd_node({{string_stream({values[0], values[1]}), 2},
                            {string_stream({values[2], values[3]}), 2},
                            {string_stream({values[4], values[5]}), 2}},
                           dict);
  strings.children.push_back(bool_node({true, false, true, true, false, true, true, false, true}));
  check_zstd_takes(strings, DType::make_utf8(true), 9);

  const std::vector<int64_t> ints = {1, -2, 3, 4, 1LL << 60};
  auto part = [&](size_t a, size_t b) {
    return std::string(reinterpret_cast<const char*>(ints.data() + a), (b - a) * 8);
  };
  auto primitives = zstd_node({{part(0, 2), 2}, {part(2, 5), 3}});
  check_zstd_takes(primitives, DType::make_primitive(PType::i64, false), 5);
  // Older files: frames without value counts are inflated whole, and the take still answers.
  check_zstd_takes(zstd_node({{part(0, 5), 0}}), DType::make_primitive(PType::i64, false), 5);

  SECTION("frames that miscount their values are corrupt") {
    auto wrong = zstd_node({{part(0, 2), 3}, {part(2, 5), 3}});
    format::DecodeContext ctx;
    auto r = ctx.decode_take(wrong, DType::make_primitive(PType::i64, false), 5,
                             std::vector<uint64_t>{4});
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code() == Errc::corrupt);
    auto short_strings = zstd_node({{string_stream({"ab"}), 2}});
    format::DecodeContext ctx2;
    r = ctx2.decode_take(short_strings, DType::make_utf8(false), 2, std::vector<uint64_t>{1});
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code() == Errc::corrupt);
  }
}

TEST_CASE("zstd_max_inflated holds for zstd's own best ratios", "[format][zstd]") {
  // Runs of one byte are what zstd shrinks most (RLE blocks, or matches at offset 1), at any
  // level: the bound must still let them through.
  for (const size_t n : {size_t{1} << 17, size_t{8} << 20, size_t{64} << 20}) {
    const std::string zeros(n, '\0');
    for (const int level : {1, 3, 19}) {
      std::string out(ZSTD_compressBound(n), '\0');
      const size_t c = ZSTD_compress(out.data(), out.size(), zeros.data(), n, level);
      REQUIRE_FALSE(ZSTD_isError(c));
      INFO(n << " zeros at level " << level << " in " << c << " bytes");
      CHECK(format::zstd_max_inflated(c) >= n);
    }
  }
  CHECK(format::zstd_max_inflated(3) == 0);  // a block header alone regenerates nothing
  CHECK(format::zstd_max_inflated(4) == 128 * 1024);
  CHECK(format::zstd_max_inflated(UINT64_MAX / 2) == UINT64_MAX);  // saturates, never wraps
}
