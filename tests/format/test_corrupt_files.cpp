// SPDX-License-Identifier: Apache-2.0
// Hostile files: every failure is a clear error (never a crash, hang or runaway allocation).
// Runs under ASan and UBSan in scripts/test.sh.
#include <catch2/catch.hpp>

#include <random>

#include "format/decode.hpp"
#include "format/file_format.hpp"
#include "format/fuzz.hpp"
#include "format/reader.hpp"
#include "tests/format/fixtures.hpp"
#include "tests/format/seed_files.hpp"

using namespace oc;
using namespace oc::test;

namespace {
bool is_data_error(Errc c) { return c == Errc::corrupt || c == Errc::unsupported; }
}  // namespace

TEST_CASE("the frozen format constants keep their values", "[format][corrupt]") {
  using namespace format::forever;
  CHECK(std::string(kMagic.begin(), kMagic.end()) == "VTXF");
  CHECK(kVersion == 1);
  CHECK(kEofSize == 8);
  CHECK(kMaxPostscriptSize == 65527);
}

TEST_CASE("a file truncated at every byte fails cleanly", "[format][corrupt]") {
  for (const char* name : {"tiny.vortex", "compact_strings.vortex"}) {
    const auto bytes = read_seed(name);
    REQUIRE(format::fuzz_open_scan(bytes).ok());
    for (size_t len = 0; len < bytes.size(); ++len) {
      INFO(name << " truncated to " << len);
      auto r = format::fuzz_open_scan({bytes.data(), len});
      REQUIRE_FALSE(r.ok());
      CHECK(r.error().code() == Errc::corrupt);
    }
  }
}

TEST_CASE("bit flips anywhere give data or a clear error", "[format][corrupt]") {
  const auto bytes = read_seed("mixed.vortex");
  std::mt19937 rng(1234);
  int errors = 0;
  for (size_t pos = 0; pos < bytes.size(); pos += 7) {
    auto copy = bytes;
    copy[pos] ^= static_cast<uint8_t>(1u << (rng() % 8));
    auto r = format::fuzz_open_scan(copy);
    if (!r.ok()) {
      ++errors;
      INFO("flip at " << pos << ": " << r.error().to_string());
      CHECK(is_data_error(r.error().code()));
    }
  }
  CHECK(errors > 0);
}

TEST_CASE("trailer fields are validated", "[format][corrupt]") {
  const auto good = read_seed("tiny.vortex");
  const size_t eof = good.size() - 8;
  auto bad_version = good;
  bad_version[eof] = 2;
  CHECK(format::fuzz_open_scan(bad_version).error().code() == Errc::unsupported);
  auto huge_ps = good;
  huge_ps[eof + 2] = 0xff;
  huge_ps[eof + 3] = 0xff;
  CHECK(format::fuzz_open_scan(huge_ps).error().code() == Errc::corrupt);
  auto bad_magic = good;
  bad_magic.back() = 'X';
  auto r = format::fuzz_open_scan(bad_magic);
  CHECK(r.error().code() == Errc::corrupt);
  CHECK(r.error().message().find("VTXF") != std::string::npos);
}

TEST_CASE("deep encoding recursion is refused", "[format][corrupt]") {
  ArrayView v = primitive_node<int32_t>({1});
  for (int i = 0; i < 200; ++i) v = node("vortex.masked", {}, {}, {v});
  auto r = decode(v, DType::make_primitive(PType::i32, true), 1);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code() == Errc::corrupt);
  CHECK(r.error().to_string().find("deeper than") != std::string::npos);
}

TEST_CASE("absurd lengths are refused before allocating", "[format][corrupt]") {
  // A constant of 2^40 rows of i64 would need 8 TiB.
  auto c = node("vortex.constant", {}, {Buffer::copy_of(std::vector<uint8_t>{0x18, 0x02})});
  auto r = decode(c, DType::make_primitive(PType::i64, false), uint64_t{1} << 40);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code() == Errc::corrupt);
  // A primitive whose buffer does not cover its length.
  r = decode(primitive_node<int64_t>({1, 2}), DType::make_primitive(PType::i64, false), 1'000'000'000);
  CHECK(r.error().code() == Errc::corrupt);
}
