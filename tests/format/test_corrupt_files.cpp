// SPDX-License-Identifier: Apache-2.0
// Hostile files: every failure is a clear error (never a crash, hang or runaway allocation).
// Runs under ASan and UBSan in scripts/test.sh.
#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>

#include "config/defaults.hpp"
#include "format/decode.hpp"
#include "format/fbs/vortex_file_generated.h"
#include "format/file_format.hpp"
#include "format/fuzz.hpp"
#include "format/proto/dict.pb.h"
#include "format/proto/varbin.pb.h"
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
  for (const char* name : {"tiny.vortex", "compact_strings.vortex", "compact_numbers.vortex"}) {
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
  // compact_numbers.vortex: the flips land in pco chunk metas and pages too.
  for (const auto& [name, step] :
       {std::pair{"mixed.vortex", 7}, std::pair{"compact_numbers.vortex", 61}}) {
    const auto bytes = read_seed(name);
    std::mt19937 rng(1234);
    int errors = 0;
    for (size_t pos = 0; pos < bytes.size(); pos += step) {
      auto copy = bytes;
      copy[pos] ^= static_cast<uint8_t>(1u << (rng() % 8));
      auto r = format::fuzz_open_scan(copy);
      if (!r.ok()) {
        ++errors;
        INFO(name << ": flip at " << pos << ": " << r.error().to_string());
        CHECK(is_data_error(r.error().code()));
      }
    }
    INFO(name);
    CHECK(errors > 0);
  }
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

TEST_CASE("a Parquet file and a truncated Vortex file are told apart", "[format][corrupt]") {
  const auto good = read_seed("tiny.vortex");
  auto parquet = good;  // Parquet begins and ends with its magic
  std::memcpy(parquet.data(), "PAR1", 4);
  std::memcpy(parquet.data() + parquet.size() - 4, "PAR1", 4);
  auto p = format::fuzz_open_scan(parquet);
  REQUIRE_FALSE(p.ok());
  CHECK(p.error().code() == Errc::corrupt);
  CHECK(p.error().message() == "fuzz input is not a Vortex file (Parquet magic PAR1 found)");

  auto t = format::fuzz_open_scan({good.data(), good.size() - 100});
  REQUIRE_FALSE(t.ok());
  CHECK(t.error().code() == Errc::corrupt);
  CHECK(t.error().message().find("fuzz input is truncated: it starts with the Vortex magic VTXF") ==
        0);
  CHECK(t.error().message().find("Parquet") == std::string::npos);

  const std::vector<uint8_t> text(200, 'x');
  auto g = format::fuzz_open_scan(text);
  REQUIRE_FALSE(g.ok());
  CHECK(g.error().message() ==
        "fuzz input is not a Vortex file (it does not end with the magic VTXF)");
}

TEST_CASE("deep encoding recursion is refused", "[format][corrupt]") {
  ArrayView v = primitive_node<int32_t>({1});
  for (int i = 0; i < 200; ++i)
    v = node("vortex.chunked", {}, {}, {primitive_node<uint64_t>({0, 1}), v});
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
  r = decode(primitive_node<int64_t>({1, 2}), DType::make_primitive(PType::i64, false),
             1'000'000'000);
  CHECK(r.error().code() == Errc::corrupt);
}

// ---- issue 15: sizes that wrap, footers far from the end, failures that used to throw ----------

TEST_CASE("row counts whose byte sizes wrap 64 bits are refused", "[format][corrupt][hostile]") {
  // 2^61 rows of i64 are 2^64 bytes, which wrapped to 0: the checks passed and the decoders
  // filled a 64-byte buffer with 2^61 values.
  const uint64_t rows = uint64_t{1} << 61;
  const auto i64 = DType::make_primitive(PType::i64, false);
  SECTION("a constant") {
    auto c = node("vortex.constant", {}, {Buffer::copy_of(std::vector<uint8_t>{0x18, 0x02})});
    auto r = decode(c, i64, rows);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code() == Errc::corrupt);
  }
  SECTION("a primitive with an empty buffer") {
    auto r = decode(node("vortex.primitive", {}, {Buffer()}), i64, rows);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code() == Errc::corrupt);
    CHECK(r.error().to_string().find("primitive buffer is 0 bytes") != std::string::npos);
  }
  SECTION("a fixed-size list whose element count wraps") {
    auto list = std::make_shared<DType>();
    list->kind = format::TypeKind::fixed_size_list;
    list->list_size = 1u << 31;
    list->children = {DType::make_primitive(PType::i8, false)};
    auto r = decode(node("vortex.fixed_size_list", {}, {}, {primitive_node<int8_t>({})}), list,
                    uint64_t{1} << 33);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code() == Errc::corrupt);
  }
}

TEST_CASE("offsets and codes past what their buffers hold are refused",
          "[format][corrupt][hostile]") {
  SECTION("varbin offsets past the bytes") {
    pb::VarBinMetadata meta;
    meta.set_offsets_ptype(static_cast<int32_t>(PType::u32));
    auto n = node("vortex.varbin", meta.SerializeAsString(), {bytes_of("abc")},
                  {primitive_node<uint32_t>({0, 2, 4000})});
    auto r = decode(n, DType::make_utf8(false), 2);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code() == Errc::corrupt);
  }
  SECTION("dictionary codes out of range") {
    pb::DictMetadata meta;
    meta.set_values_len(2);
    meta.set_codes_ptype(static_cast<int32_t>(PType::u8));
    auto n = node("vortex.dict", meta.SerializeAsString(), {},
                  {primitive_node<uint8_t>({0, 1, 200}), primitive_node<int64_t>({7, 8})});
    auto r = decode(n, DType::make_primitive(PType::i64, false), 3);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code() == Errc::corrupt);
  }
}

namespace {

Result<ColumnPtr> throws_bad_alloc(const ArrayView&, const DTypePtr&, uint64_t,
                                   format::DecodeContext&) {
  throw std::bad_alloc();
}

// An object of @p size bytes, zeros but for a Vortex trailer whose postscript puts its footer
// at offset 0: what a crafted 100 GB object looks like to the reader. Counts the bytes read.
class SparseObject : public format::SegmentSource {
 public:
  explicit SparseObject(uint64_t size) : size_(size) {
    flatbuffers::FlatBufferBuilder b;
    auto seg = [&](uint64_t offset, uint32_t length) {
      return fb::CreatePostscriptSegment(b, offset, length, 0);
    };
    const auto layout = seg(0, 1u << 20), footer = seg(1u << 20, 1u << 20);
    b.Finish(fb::CreatePostscript(b, 0, layout, 0, footer));
    tail_.assign(b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize());
    const uint16_t ps_len = static_cast<uint16_t>(tail_.size());
    const uint8_t eof[8] = {
        1, 0, static_cast<uint8_t>(ps_len), static_cast<uint8_t>(ps_len >> 8), 'V', 'T', 'X', 'F'};
    tail_.insert(tail_.end(), eof, eof + 8);
  }
  uint64_t size() const override { return size_; }
  Result<std::vector<Buffer>> read(std::span<const format::ByteRange> ranges) override {
    std::vector<Buffer> out;
    for (const auto& r : ranges) {
      REQUIRE(r.length <= (uint64_t{64} << 20));  // the test's own bound on what a read may ask
      ++stats_.reads;
      stats_.bytes_read += r.length;
      Buffer b = Buffer::allocate(r.length);
      const uint64_t tail_at = size_ - tail_.size();
      for (uint64_t i = std::max(r.offset, tail_at); i < r.offset + r.length; ++i) {
        b.mutable_data()[i - r.offset] = tail_[i - tail_at];
      }
      out.push_back(std::move(b));
    }
    return out;
  }
  const std::string& name() const override { return name_; }
  format::SourceStats stats() const override { return stats_; }

 private:
  uint64_t size_;
  std::vector<uint8_t> tail_;
  std::string name_ = "sparse-object";
  format::SourceStats stats_;
};

}  // namespace

TEST_CASE("a footer far from the end of a huge object is corrupt after one read",
          "[format][corrupt][hostile]") {
  auto object = std::make_shared<SparseObject>(uint64_t{100} << 30);
  auto f = format::VortexFile::open(object);
  REQUIRE_FALSE(f.ok());
  CHECK(f.error().code() == Errc::corrupt);
  CHECK(f.error().to_string().find("footer_max_bytes") != std::string::npos);
  CHECK(object->stats().reads <= 2);
  CHECK(object->stats().bytes_read <= format::forever::kInitialReadSize);
}

TEST_CASE("an allocation that fails inside a decoder fails that decode only",
          "[format][corrupt][hostile]") {
  format::register_encoding("test.bad_alloc", throws_bad_alloc);
  auto r = decode(node("test.bad_alloc"), DType::make_primitive(PType::i32, false), 4);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code() == Errc::out_of_memory);
  // Inside a struct, the error names the path to it; the next decode works.
  auto s = node("vortex.struct", {}, {}, {node("test.bad_alloc")});
  r = decode(s, DType::make_struct({"x"}, {DType::make_primitive(PType::i32, false)}, false), 4);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code() == Errc::out_of_memory);
  CHECK(decode(primitive_node<int32_t>({1, 2}), DType::make_primitive(PType::i32, false), 2).ok());
  // Buffer sizes that cannot be rounded up or multiplied are allocation failures too.
  CHECK_THROWS_AS(Buffer::allocate(UINT64_MAX - 10), std::bad_alloc);
  CHECK_THROWS_AS(Buffer::allocate_array(uint64_t{1} << 61, 8), std::bad_alloc);
}

TEST_CASE("nesting deeper than max_array_depth is refused, and the knob admits it",
          "[format][corrupt][hostile]") {
  // vortex-data's own file: three i32 rows under 100 one-field structs.
  std::ifstream in(OC_SOURCE_DIR "/tests/data/bad/issue-15-deep-nesting.vortex", std::ios::binary);
  const std::vector<uint8_t> bytes(std::istreambuf_iterator<char>(in), {});
  REQUIRE(bytes.size() > 1000);
  auto r = format::fuzz_open_scan(bytes);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code() == Errc::corrupt);
  CHECK(r.error().to_string().find("max_array_depth") != std::string::npos);
  const Defaults saved = defaults();
  Defaults deeper = saved;
  deeper.max_array_depth = 1024;
  set_defaults(deeper);
  r = format::fuzz_open_scan(bytes);
  set_defaults(saved);
  CHECK(r.ok());
}

TEST_CASE("the hostile files and the fuzzers' findings replay to clear errors",
          "[format][corrupt][hostile]") {
  // tests/data/bad: tests/format/hostile_files.py's hand-crafted files and every file input a
  // fuzz campaign crashed on, kept once fixed.
  int replayed = 0;
  for (const auto& entry : std::filesystem::directory_iterator(OC_SOURCE_DIR "/tests/data/bad")) {
    if (entry.path().extension() != ".vortex") continue;
    std::ifstream in(entry.path(), std::ios::binary);
    const std::vector<uint8_t> bytes(std::istreambuf_iterator<char>(in), {});
    INFO(entry.path());
    for (auto r : {format::fuzz_open_scan(bytes), format::fuzz_take(bytes)}) {
      REQUIRE_FALSE(r.ok());
      CHECK(is_data_error(r.error().code()));
    }
    ++replayed;
  }
  CHECK(replayed >= 6);
}
