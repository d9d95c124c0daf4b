// SPDX-License-Identifier: Apache-2.0
// Random access: DecodeContext::decode_take and VortexFile::take return exactly the rows that a
// full decode (or scan) followed by `take` returns, for take-aware encodings and the rest.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <set>
#include <thread>
#include <type_traits>

#include "config/defaults.hpp"
#include "format/encodings/bitpacked.hpp"
#include "format/proto/bitpacked.pb.h"
#include "format/proto/dict.pb.h"
#include "format/proto/list.pb.h"
#include "format/proto/listview.pb.h"
#include "format/proto/runend.pb.h"
#include "format/proto/scalar.pb.h"
#include "format/reader.hpp"
#include "format/take_cache.hpp"
#include "tests/format/alp_golden.hpp"
#include "tests/format/fixtures.hpp"
#include "tests/format/nested_golden.hpp"
#include "tests/format/seed_files.hpp"
#include "tests/format/strings_golden.hpp"

using namespace oc;
using namespace oc::test;

namespace {

// Sorted unique row sets for an array of @p len rows: empty, boundaries (block edges and
// @p extra, such as patch positions), one row, everything, runs, and seeded random subsets.
std::vector<std::vector<uint64_t>> row_sets(uint64_t len, std::mt19937_64& rng,
                                            const std::vector<uint64_t>& extra = {}) {
  std::vector<std::vector<uint64_t>> out{{}};
  if (len == 0) return out;
  std::set<uint64_t> edges{0, len - 1};
  for (uint64_t e : std::initializer_list<uint64_t>{511, 512, 1023, 1024, 1025, 2047, 2048, 2049}) {
    if (e < len) edges.insert(e);
  }
  for (uint64_t e : extra) {
    if (e < len) edges.insert(e);
  }
  out.emplace_back(edges.begin(), edges.end());
  out.push_back({len / 2});
  std::vector<uint64_t> all(len);
  for (uint64_t i = 0; i < len; ++i) all[i] = i;
  out.push_back(all);
  // Runs, as a list's taken elements come: around the 64 rows a block at which a bitpacked take
  // unpacks the block whole, some of them across block edges.
  for (const auto& [run, every] : {std::pair<uint64_t, uint64_t>{64, 301}, {63, 200}, {500, 700}}) {
    std::vector<uint64_t> runs;
    for (uint64_t b = 7; b < len; b += every) {
      for (uint64_t r = b; r < std::min(len, b + run); ++r) runs.push_back(r);
    }
    out.push_back(std::move(runs));
  }
  for (uint64_t count : {uint64_t{3}, uint64_t{50}, len / 3 + 1}) {
    std::set<uint64_t> pick;
    for (uint64_t k = 0; k < count; ++k) pick.insert(rng() % len);
    out.emplace_back(pick.begin(), pick.end());
  }
  return out;
}

// Checks decode_take of @p n against full decode + take for every row set.
void check_takes(const ArrayView& n, const DTypePtr& t, uint64_t len, std::mt19937_64& rng,
                 const std::vector<uint64_t>& extra = {}) {
  auto full = decode(n, t, len);
  REQUIRE(full.ok());
  for (const auto& rows : row_sets(len, rng, extra)) {
    INFO(n.encoding << " as " << t->to_string() << ", " << rows.size() << " of " << len << " rows");
    format::DecodeContext ctx;
    auto got = ctx.decode_take(n, t, len, rows);
    REQUIRE(got.ok());
    REQUIRE((*got)->length == rows.size());
    auto want = format::take(*full, rows);
    REQUIRE(want.ok());
    CHECK(rows_of(**got) == rows_of(**want));
  }
}

template <class T>
constexpr PType ptype_of() {
  constexpr uint8_t kLog2Size = sizeof(T) == 1 ? 0 : sizeof(T) == 2 ? 1 : sizeof(T) == 4 ? 2 : 3;
  return static_cast<PType>(kLog2Size + (std::is_signed_v<T> ? 4 : 0));
}

// Packs @p values (logical rows, after @p offset leading rows) into FastLanes blocks by the
// layout of format/encodings/bitpacked.hpp, bit by bit.
template <class T>
ArrayView bitpacked_node(const std::vector<T>& values, unsigned width, unsigned offset) {
  constexpr unsigned kBits = sizeof(T) * 8;
  constexpr unsigned kLanes = 1024 / kBits;
  const size_t blocks = (values.size() + offset + 1023) / 1024;
  std::vector<T> packed(blocks * kLanes * width, 0);
  for (size_t b = 0; b < blocks; ++b) {
    for (unsigned lane = 0; lane < kLanes; ++lane) {
      for (unsigned row = 0; row < kBits; ++row) {
        const size_t at = b * 1024 + format::encodings::fastlanes_index(row, lane);
        const T v = at >= offset && at - offset < values.size() ? values[at - offset] : T{0};
        for (unsigned bit = 0; bit < width; ++bit) {
          if (((v >> bit) & 1) == 0) continue;
          const unsigned k = row * width + bit;
          packed[b * kLanes * width + (k / kBits) * kLanes + lane] |=
              static_cast<T>(T{1} << (k % kBits));
        }
      }
    }
  }
  pb::BitPackedMetadata m;
  m.set_bit_width(width);
  m.set_offset(offset);
  return node("fastlanes.bitpacked", m.SerializeAsString(), {buffer_of(packed)});
}

std::vector<bool> random_validity(size_t n, std::mt19937_64& rng) {
  std::vector<bool> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = rng() % 5 != 0;
  return v;
}

}  // namespace

TEMPLATE_TEST_CASE("unpack_one reads every value of a block like unpack_block",
                   "[format][take][bitpacked]", uint8_t, uint16_t, uint32_t, uint64_t) {
  std::mt19937_64 rng(sizeof(TestType) * 3);
  for (unsigned width = 0; width <= sizeof(TestType) * 8; ++width) {
    std::vector<TestType> values(1024);
    const uint64_t mask = width == 64 ? ~uint64_t{0} : (uint64_t{1} << width) - 1;
    for (auto& v : values) v = static_cast<TestType>(rng() & mask);
    const auto n = bitpacked_node(values, width, 0);
    const auto* packed = reinterpret_cast<const TestType*>(n.buffers[0].data());
    std::vector<TestType> unpacked(1024);
    format::encodings::unpack_block<TestType>(packed, width, unpacked.data());
    REQUIRE(unpacked == values);
    for (unsigned i = 0; i < 1024; ++i) {
      if (format::encodings::unpack_one<TestType>(packed, width, i) != values[i]) {
        FAIL("width " << width << " index " << i);
      }
    }
  }
}

TEMPLATE_TEST_CASE("bitpacked takes equal full decodes, with offsets, patches and validity",
                   "[format][take][bitpacked]", int8_t, uint8_t, int16_t, uint16_t, int32_t,
                   uint32_t, int64_t, uint64_t) {
  using U = std::make_unsigned_t<TestType>;
  std::mt19937_64 rng(99 + sizeof(TestType));
  const unsigned width = GENERATE(0u, 3u, unsigned(sizeof(TestType) * 8));
  const unsigned offset = GENERATE(0u, 5u, 1023u);
  const bool patched = GENERATE(false, true);
  const size_t len = 3100;
  INFO("width " << width << " offset " << offset << " patched " << patched);
  const uint64_t mask = width == 64 ? ~uint64_t{0} : (uint64_t{1} << width) - 1;
  std::vector<U> values(len);
  for (auto& v : values) v = static_cast<U>(rng() & mask);
  auto n = bitpacked_node(values, width, offset);
  const std::vector<uint32_t> patch_at{0, 1023, 1024, 2000, 3099};
  if (patched) {
    pb::BitPackedMetadata m;
    m.set_bit_width(width);
    m.set_offset(offset);
    m.mutable_patches()->set_len(patch_at.size());
    m.mutable_patches()->set_indices_ptype(static_cast<uint32_t>(PType::u32));
    const auto s = m.SerializeAsString();
    n.metadata.assign(s.begin(), s.end());
    std::vector<U> patch_values(patch_at.size(), static_cast<U>(~U{0}));
    n.children = {primitive_node(patch_at), primitive_node(patch_values)};
  }
  n.children.push_back(bool_node(random_validity(len, rng)));
  check_takes(n, DType::make_primitive(ptype_of<TestType>(), true), len, rng,
              std::vector<uint64_t>(patch_at.begin(), patch_at.end()));
}

TEST_CASE("primitive, bool, constant and sequence takes equal full decodes", "[format][take]") {
  std::mt19937_64 rng(1);
  const size_t len = 2500;
  std::vector<int32_t> ints(len);
  for (auto& v : ints) v = static_cast<int32_t>(rng());
  auto prim = primitive_node(ints);
  prim.children.push_back(bool_node(random_validity(len, rng)));
  check_takes(prim, DType::make_primitive(PType::i32, true), len, rng);

  std::vector<bool> bits(len);
  for (size_t i = 0; i < len; ++i) bits[i] = rng() & 1;
  auto b = bool_node(bits);
  b.children.push_back(bool_node(random_validity(len, rng)));
  check_takes(b, DType::make_bool(true), len, rng);

  pb::ScalarValue text;
  text.set_string_value("abc");
  check_takes(node("vortex.constant", {}, {bytes_of(text.SerializeAsString())}),
              DType::make_utf8(false), len, rng);
  // A constant false validity child: every row null.
  pb::ScalarValue no;
  no.set_bool_value(false);
  auto all_null = primitive_node(ints);
  all_null.children.push_back(node("vortex.constant", {}, {bytes_of(no.SerializeAsString())}));
  check_takes(all_null, DType::make_primitive(PType::i32, true), len, rng);

  for (const char* name : {"sequence_i64", "sequence_i32_descending"}) {
    auto g = alp_golden::load(name);
    check_takes(g.root, alp_golden::dtype_of(g.expected), g.expected.rows, rng);
  }
}

TEST_CASE("for, zigzag, runend and bitpacked golden takes equal full decodes", "[format][take]") {
  std::mt19937_64 rng(2);
  for (const char* name :
       {"bitpacked_u8_w3", "bitpacked_u16_w7", "bitpacked_u32_w13", "bitpacked_u64_w21",
        "bitpacked_u32_patches", "bitpacked_i32_nulls", "for_i32", "for_i64_negative", "for_i8",
        "for_bitpacked_sliced", "zigzag_i16", "zigzag_i64_extremes", "runend_i64",
        "runend_codes_nulls", "alp_f64_patches_nulls", "sparse_i64"}) {
    INFO("golden case " << name);
    auto g = alp_golden::load(name);
    check_takes(g.root, alp_golden::dtype_of(g.expected), g.expected.rows, rng);
  }
}

TEST_CASE("runend takes respect the offset and share runs between rows", "[format][take][runend]") {
  std::mt19937_64 rng(3);
  // Runs end at 15, 20, 1040, 3000 physical rows; the array starts at physical row 10.
  pb::RunEndMetadata m;
  m.set_ends_ptype(static_cast<uint32_t>(PType::u32));
  m.set_num_runs(4);
  m.set_offset(10);
  auto n = node(
      "vortex.runend", m.SerializeAsString(), {},
      {primitive_node<uint32_t>({15, 20, 1040, 3000}), primitive_node<int64_t>({-1, 7, 8, 9})});
  check_takes(n, DType::make_primitive(PType::i64, false), 2990, rng, {4, 5, 9, 10, 1029, 1030});
  format::DecodeContext ctx;
  auto got = ctx.decode_take(n, DType::make_primitive(PType::i64, false), 2990,
                             std::vector<uint64_t>{0, 4, 5, 2989});
  REQUIRE(got.ok());
  CHECK(values_of<int64_t>(**got) == std::vector<int64_t>{-1, -1, 7, 9});
}

TEST_CASE("dict, varbinview and fsst takes equal full decodes", "[format][take]") {
  std::mt19937_64 rng(4);
  for (auto [name, t] : std::vector<std::pair<const char*, DTypePtr>>{
           {"dict_utf8", DType::make_utf8(true)},
           {"dict_fsst_values", DType::make_utf8(true)},
           {"dict_i64_nullable_codes", DType::make_primitive(PType::i64, true)},
           {"dict_f64", DType::make_primitive(PType::f64, false)},
           {"fsst_utf8", DType::make_utf8(true)},
           {"fsst_binary", DType::make_binary(false)},
           {"varbinview_utf8", DType::make_utf8(true)},
           {"varbinview_two_buffers", DType::make_utf8(true)},
           {"varbinview_binary", DType::make_binary(false)},
           {"varbin_utf8", DType::make_utf8(true)}}) {
    INFO("golden case " << name);
    auto g = strings_golden::load(name);
    check_takes(g.root, t, g.rows.size(), rng);
  }

  // A varbinview of seeded random strings, inlined and not, with nulls.
  const size_t len = 1500;
  std::string data;
  std::vector<uint8_t> views(len * 16);
  for (size_t i = 0; i < len; ++i) {
    const auto size = static_cast<uint32_t>(rng() % 30);
    std::string s(size, 'a');
    for (auto& ch : s) ch = static_cast<char>('a' + rng() % 26);
    uint8_t* v = views.data() + i * 16;
    std::memcpy(v, &size, 4);
    if (size <= 12) {
      std::memcpy(v + 4, s.data(), size);
    } else {
      const uint32_t buffer = 0, offset = static_cast<uint32_t>(data.size());
      std::memcpy(v + 4, s.data(), 4);
      std::memcpy(v + 8, &buffer, 4);
      std::memcpy(v + 12, &offset, 4);
      data += s;
    }
  }
  auto vbv = node("vortex.varbinview", {}, {bytes_of(data), buffer_of(views)},
                  {bool_node(random_validity(len, rng))});
  check_takes(vbv, DType::make_utf8(true), len, rng);

  // A dict array of those strings, its codes bitpacked.
  std::vector<uint8_t> codes(3000);
  for (auto& c : codes) c = static_cast<uint8_t>(rng() % len % 256);
  pb::DictMetadata dm;
  dm.set_values_len(len);
  dm.set_codes_ptype(static_cast<uint32_t>(PType::u8));
  dm.set_is_nullable_codes(false);
  auto dict = node("vortex.dict", dm.SerializeAsString(), {}, {bitpacked_node(codes, 8, 3), vbv});
  check_takes(dict, DType::make_utf8(true), codes.size(), rng);
}

TEST_CASE("list takes equal full decodes: offsets not from 0, empty lists, nulls, corrupt offsets",
          "[format][take]") {
  std::mt19937_64 rng(9);
  const uint64_t len = 2500;
  // Offsets from 7 on, a fifth of the lists empty; elements bitpacked over several blocks, some
  // past the last list.
  std::vector<uint32_t> offsets{7};
  for (uint64_t i = 0; i < len; ++i) {
    offsets.push_back(offsets.back() + (rng() % 5 == 0 ? 0 : static_cast<uint32_t>(rng() % 9)));
  }
  std::vector<uint16_t> values(offsets.back() + 3);
  for (auto& v : values) v = static_cast<uint16_t>(rng() % 4000);
  pb::ListMetadata m;
  m.set_elements_len(values.size());
  m.set_offset_ptype(static_cast<int32_t>(PType::u32));
  for (const bool nullable : {true, false}) {
    auto t = std::make_shared<DType>();
    t->kind = format::TypeKind::list;
    t->nullable = nullable;
    t->children = {DType::make_primitive(PType::u16, false)};
    std::vector<ArrayView> children{bitpacked_node(values, 12, 0), primitive_node(offsets)};
    if (nullable) children.push_back(bool_node(random_validity(len, rng)));
    const auto list = node("vortex.list", m.SerializeAsString(), {}, children);
    INFO("nullable " << nullable);
    check_takes(list, t, len, rng);
  }
  // Offsets that decrease between two taken rows, or run past the elements: corrupt, not a crash.
  auto t = std::make_shared<DType>();
  t->kind = format::TypeKind::list;
  t->children = {DType::make_primitive(PType::u16, false)};
  for (const auto& bad :
       std::vector<std::vector<uint32_t>>{{0, 5, 9, 3, 4}, {0, 2, 1u << 30, 1u << 30, 1u << 30}}) {
    const auto list = node("vortex.list", m.SerializeAsString(), {},
                           {bitpacked_node(values, 12, 0), primitive_node(bad)});
    format::DecodeContext ctx;
    auto r = ctx.decode_take(list, t, 4, std::vector<uint64_t>{0, 1, 3});
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code() == Errc::corrupt);
  }
}

TEST_CASE("listview takes equal full decodes: views in order, overlapping, backwards, nulls",
          "[format][take]") {
  std::mt19937_64 rng(12);
  for (const char* name : {"listview_overlap", "listview_in_order"}) {
    INFO("golden case " << name);
    const auto rows = golden::read_lines(golden::file(name, ".expected")).size();
    const auto element = name == std::string("listview_overlap") ? PType::i16 : PType::i64;
    check_takes(golden::load_tree(name),
                nested_golden::make_list(DType::make_primitive(element, true), true), rows, rng);
  }
  const uint64_t len = 2500;
  std::vector<uint16_t> values(9000);
  for (auto& v : values) v = static_cast<uint16_t>(rng() % 4000);
  pb::ListViewMetadata m;
  m.set_elements_len(values.size());
  m.set_offset_ptype(static_cast<int32_t>(PType::u32));
  m.set_size_ptype(static_cast<int32_t>(PType::u16));
  for (const bool in_order : {true, false}) {
    // In order: each view starts where the one before ends (a fifth empty). Otherwise anywhere,
    // overlapping and backwards.
    std::vector<uint32_t> offsets;
    std::vector<uint16_t> sizes;
    uint32_t at = 5;
    for (uint64_t i = 0; i < len; ++i) {
      const auto size = static_cast<uint16_t>(rng() % 5 == 0 ? 0 : rng() % 7);
      offsets.push_back(in_order ? at : static_cast<uint32_t>(rng() % (values.size() - 8)));
      sizes.push_back(size);
      at += size;
    }
    for (const bool nullable : {true, false}) {
      INFO("in order " << in_order << ", nullable " << nullable);
      std::vector<ArrayView> children{bitpacked_node(values, 12, 0), primitive_node(offsets),
                                      primitive_node(sizes)};
      if (nullable) children.push_back(bool_node(random_validity(len, rng)));
      check_takes(node("vortex.listview", m.SerializeAsString(), {}, children),
                  nested_golden::make_list(DType::make_primitive(PType::u16, false), nullable), len,
                  rng);
    }
  }
  // Takes from hand-made nodes of list<u16> with these offsets and sizes, not nullable.
  auto take_from = [&](const pb::ListViewMetadata& meta, uint64_t len, ArrayView offsets,
                       ArrayView sizes, std::vector<uint64_t> rows) {
    const auto n = node("vortex.listview", meta.SerializeAsString(), {},
                        {bitpacked_node(values, 12, 0), std::move(offsets), std::move(sizes)});
    format::DecodeContext ctx;
    return ctx.decode_take(
        n, nested_golden::make_list(DType::make_primitive(PType::u16, false), false), len, rows);
  };
  // A taken view past the elements is corrupt, not a read out of bounds.
  auto r = take_from(m, 3, primitive_node<uint32_t>({0, 8999, 3}),
                     primitive_node<uint16_t>({2, 2, 1}), {1, 2});
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code() == Errc::corrupt);
  CHECK_THAT(r.error().message(), Catch::Contains("listview row 1 views [8999, +2) past 9000"));
  // Sizes that the file's elements_len allows and whose sum wraps past 2^64: refused, not a
  // gather of 2^64 elements.
  pb::ListViewMetadata huge = m;
  huge.set_elements_len(UINT64_MAX);
  huge.set_size_ptype(static_cast<int32_t>(PType::u64));
  auto w = take_from(huge, 2, primitive_node<uint32_t>({0, 0}),
                     primitive_node<uint64_t>({10, UINT64_MAX - 4}), {0, 1});
  REQUIRE_FALSE(w.ok());
  CHECK(w.error().code() == Errc::unsupported);
}

TEST_CASE("decode_take refuses rows that are unsorted, repeated or out of range",
          "[format][take]") {
  const auto n = primitive_node<int32_t>({1, 2, 3});
  const auto t = DType::make_primitive(PType::i32, false);
  for (const auto& rows : std::vector<std::vector<uint64_t>>{{3}, {1, 0}, {1, 1}, {0, 99}}) {
    format::DecodeContext ctx;
    auto r = ctx.decode_take(n, t, 3, rows);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code() == Errc::invalid);
  }
}

// ---- file level ------------------------------------------------------------------------------

namespace {

// The interop corpus (tests/interop/corpus.py): $ONECOPY_CORPUS_DIR, else tests/data/corpus,
// where tests/interop/conftest.py writes it. scripts/test.sh writes it in its pytest step, after
// `meson test`, so the tests that need it are hidden ("[.corpus]") and run on their own once it
// exists: `onecopy-tests "[corpus]"`. Asked for and absent, they fail rather than pass on less.
std::filesystem::path corpus_dir() {
  const char* env = std::getenv("ONECOPY_CORPUS_DIR");
  return env ? std::filesystem::path(env)
             : std::filesystem::path(OC_SOURCE_DIR) / "tests/data/corpus";
}

// Fails the test unless the corpus at corpus_dir() is complete: write_corpus stamps
// corpus.json last, so a directory without it was never written or was interrupted.
void require_corpus() {
  const auto dir = corpus_dir();
  if (!std::filesystem::exists(dir / "corpus.json")) {
    FAIL("no interop corpus at " << dir.string()
                                 << " (no corpus.json): write one with `python "
                                    "tests/interop/corpus.py DIR` and set ONECOPY_CORPUS_DIR=DIR, "
                                    "or run pytest tests/interop, "
                                    "which writes tests/data/corpus");
  }
}

// The corpus's .vortex files, sorted; fails the test when there are none.
std::vector<std::string> corpus_files() {
  require_corpus();
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(corpus_dir())) {
    if (e.path().extension() == ".vortex") out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  if (out.empty())
    FAIL("the interop corpus at " << corpus_dir().string() << " holds no .vortex files");
  return out;
}

// Every row of @p f as one batch, decoding @p splits_in_flight splits at a time (0: the default).
Result<ColumnPtr> scan_all(const format::VortexFile& f, uint32_t splits_in_flight = 0) {
  format::ScanOptions opts;
  opts.splits_in_flight = splits_in_flight;
  opts.batch_rows = splits_in_flight == 0 ? 0 : 777;  // more splits than chunks
  OC_ASSIGN_OR_RETURN(auto s, f.scan(opts));
  std::vector<ColumnPtr> batches;
  while (true) {
    OC_ASSIGN_OR_RETURN(auto b, s->next());
    if (!b) break;
    batches.push_back(*b);
  }
  return format::concat(batches);
}

// Checks that takes of the file at @p path equal a full scan then take, for sorted, unsorted
// and repeated rows. @return false when the file uses an encoding onecopy lacks, which refuses
// the take as well as the scan.
bool check_file_takes(const std::string& path) {
  INFO(path);
  auto f = format::VortexFile::open_path(path);
  REQUIRE(f.ok());
  const uint64_t n = (*f)->row_count();
  auto bad = (*f)->take(std::vector<uint64_t>{0, n});
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().code() == Errc::invalid);
  if (n == 0) return true;
  auto scanned = scan_all(**f);
  if (!scanned.ok() && scanned.error().code() == Errc::unsupported) {
    CHECK((*f)->take(std::vector<uint64_t>{0, n - 1}).error().code() == Errc::unsupported);
    return false;
  }
  REQUIRE(scanned.ok());
  const ColumnPtr full = *scanned;
  std::mt19937_64 rng(n);
  std::vector<std::vector<uint64_t>> sets = row_sets(std::min<uint64_t>(n, 3000), rng);
  sets.erase(sets.begin() + 3);    // every row of big files is the scan's job, not take's
  std::vector<uint64_t> shuffled;  // unsorted, with repeats, across the whole file
  for (int k = 0; k < 40; ++k) shuffled.push_back(rng() % n);
  shuffled.push_back(shuffled.front());
  shuffled.push_back(n - 1);
  sets.push_back(shuffled);
  std::vector<uint64_t> sorted_far;
  for (uint64_t r = 0; r < n; r += std::max<uint64_t>(1, n / 17)) sorted_far.push_back(r);
  sets.push_back(sorted_far);
  for (const auto& rows : sets) {
    INFO(rows.size() << " rows");
    auto got = (*f)->take(rows);
    REQUIRE(got.ok());
    REQUIRE((*got)->length == rows.size());
    auto want = format::take(full, rows);
    REQUIRE(want.ok());
    CHECK(rows_of(**got) == rows_of(**want));
  }
  return true;
}

// Sets the take knobs for the scope's lifetime: segments of at least @p min_bytes are read in
// part, and takes keep @p cache_bytes of them for the next takes of their file.
class TakeKnobs {
 public:
  explicit TakeKnobs(uint64_t min_bytes, uint64_t cache_bytes = 0) : saved_(defaults()) {
    Defaults d = saved_;
    d.take_partial_segment_bytes = min_bytes;
    d.take_cache_bytes = cache_bytes;
    set_defaults(d);
  }
  ~TakeKnobs() { set_defaults(saved_); }

 private:
  const Defaults saved_;
};

struct TakeRead {
  ColumnPtr rows;
  uint64_t bytes = 0, reads = 0;  // what the take read from the file
};

// @p rows of @p f, and what reading them cost, with the knobs as they are.
TakeRead take_counting(const format::VortexFile& f, std::span<const uint64_t> rows) {
  const format::SourceStats before = f.source().stats();
  auto got = f.take(rows);
  REQUIRE(got.ok());
  const format::SourceStats after = f.source().stats();
  return {*got, after.bytes_read - before.bytes_read, after.reads - before.reads};
}

// @p rows of @p f with segments of at least @p min_bytes read in part (0: every one whole),
// starting from nothing earlier takes read.
TakeRead take_reading(const format::VortexFile& f, std::span<const uint64_t> rows,
                      uint64_t min_bytes) {
  const TakeKnobs knobs(min_bytes);
  return take_counting(f, rows);
}

// Checks that takes of @p path reading every segment in part equal takes reading them whole,
// for the row sets of check_file_takes. @return the bytes each way for 100 random rows.
std::pair<uint64_t, uint64_t> check_partial_takes(const std::string& path) {
  INFO(path);
  auto f = format::VortexFile::open_path(path);
  REQUIRE(f.ok());
  const uint64_t n = (*f)->row_count();
  if (n == 0) return {0, 0};
  std::mt19937_64 rng(n + 1);
  std::vector<std::vector<uint64_t>> sets = row_sets(std::min<uint64_t>(n, 3000), rng);
  std::vector<uint64_t> hundred;
  for (int k = 0; k < 100; ++k) hundred.push_back(rng() % n);
  sets.push_back(hundred);
  std::pair<uint64_t, uint64_t> bytes;
  for (const auto& rows : sets) {
    INFO(rows.size() << " rows");
    const TakeRead whole = take_reading(**f, rows, 0);
    const TakeRead part = take_reading(**f, rows, 1);  // every segment, however small
    REQUIRE(part.rows->length == rows.size());
    CHECK(rows_of(*part.rows) == rows_of(*whole.rows));
    if (&rows == &sets.back()) bytes = {part.bytes, whole.bytes};
  }
  return bytes;
}

// Bytes a take of the first, middle and last rows of @p f reads.
uint64_t bytes_read_by_a_small_take(const format::VortexFile& f) {
  const uint64_t before = f.source().stats().bytes_read;
  const uint64_t n = f.row_count();
  auto got = f.take(std::vector<uint64_t>{n - 1, 0, n / 2});
  REQUIRE(got.ok());
  return f.source().stats().bytes_read - before;
}

}  // namespace

TEST_CASE("file takes equal a full scan then take, in the order given", "[format][take][reader]") {
  for (const char* seed :
       {"tiny.vortex", "mixed.vortex", "compact_strings.vortex", "compact_numbers.vortex"}) {
    CHECK(check_file_takes(seed_path(seed)));  // the seed files use only encodings onecopy has
  }
}

TEST_CASE("interop corpus: file takes equal a full scan then take", "[.corpus]") {
  uint64_t taken = 0, compact = 0;
  for (const auto& path : corpus_files()) {
    INFO(path);
    CHECK(check_file_takes(path));  // every file the writers make, compact (pco) ones included
    ++taken;
    if (path.ends_with(".compact.vortex")) ++compact;
  }
  INFO(taken << " files taken");
  CHECK(compact > 0);
}

TEST_CASE("takes reading segments in part equal takes reading them whole",
          "[format][take][reader]") {
  // Only zoned.vortex is larger than the tail read at open time, which holds every segment of
  // the others: their takes read nothing more, in part or whole.
  const auto [part, whole] = check_partial_takes(seed_path("zoned.vortex"));
  INFO("100 rows read " << part << " bytes in part, " << whole << " whole");
  CHECK(part > 0);
  CHECK(part < whole);
}

TEST_CASE("interop corpus: takes reading segments in part equal takes reading them whole",
          "[.corpus]") {
  uint64_t part = 0, whole = 0, files = 0;
  for (const auto& path : corpus_files()) {
    const auto [p, w] = check_partial_takes(path);
    part += p;
    whole += w;
    ++files;
  }
  INFO(files << " files: 100 rows each read " << part << " bytes in part, " << whole << " whole");
  CHECK(files > 0);
  CHECK(part * 2 < whole);
}

TEST_CASE("a take of a few rows reads a fraction of the segments it reads in part",
          "[format][take][reader]") {
  auto f = *format::VortexFile::open_path(seed_path("zoned.vortex"));
  const std::vector<uint64_t> rows{7, 25000, 49999};
  const TakeRead whole = take_reading(*f, rows, 0);
  const TakeRead part = take_reading(*f, rows, 1024);
  INFO("in part: " << part.bytes << " bytes in " << part.reads << " reads; whole: " << whole.bytes
                   << " bytes in " << whole.reads << " reads");
  CHECK(rows_of(*part.rows) == rows_of(*whole.rows));
  CHECK(part.bytes * 2 < whole.bytes);
}

TEST_CASE("takes of an open file start from what its earlier takes read",
          "[format][take][reader]") {
  // Every segment read in part (those below the knob are read whole by every take: small).
  const TakeKnobs knobs(1, 64 << 20);
  const uint64_t before = format::TakeCache::process().bytes();
  auto f = *format::VortexFile::open_path(seed_path("zoned.vortex"));
  const std::vector<uint64_t> rows{7, 25000, 49999};
  const TakeRead first = take_counting(*f, rows);
  CHECK(first.bytes > 0);
  CHECK(format::TakeCache::process().bytes() > before);
  const TakeRead again = take_counting(*f, rows);  // reads nothing
  CHECK(again.bytes == 0);
  CHECK(again.reads == 0);
  CHECK(rows_of(*again.rows) == rows_of(*first.rows));
  // Rows next to them need few new bytes: fewer than the same take of a freshly opened file.
  const std::vector<uint64_t> near{8, 25001, 49000};
  const TakeRead warm = take_counting(*f, near);
  auto g = *format::VortexFile::open_path(seed_path("zoned.vortex"));
  const TakeRead cold = take_counting(*g, near);
  INFO("warm " << warm.bytes << " bytes, cold " << cold.bytes);
  CHECK(warm.bytes < cold.bytes);
  CHECK(rows_of(*warm.rows) == rows_of(*cold.rows));
  // Takes running side by side each get their own segments, and their rows right.
  std::vector<std::thread> threads;
  std::vector<ColumnPtr> got(4);
  for (size_t t = 0; t < got.size(); ++t) {
    threads.emplace_back([&, t] { got[t] = *f->take(t % 2 ? rows : near); });
  }
  for (auto& t : threads) t.join();
  for (size_t t = 0; t < got.size(); ++t)
    CHECK(rows_of(*got[t]) == rows_of(*(t % 2 ? first : warm).rows));
  // Closing the files lets go of their segments.
  f.reset();
  g.reset();
  CHECK(format::TakeCache::process().bytes() == before);
}

TEST_CASE("file takes project columns", "[format][take][reader]") {
  auto f = *format::VortexFile::open_path(seed_path("mixed.vortex"));
  auto got = f->take(std::vector<uint64_t>{2999, 5, 5, 1024}, {"price", "id"});
  REQUIRE(got.ok());
  CHECK((*got)->dtype->names == std::vector<std::string>{"price", "id"});
  CHECK(values_of<int64_t>(*(*got)->children[1]) == std::vector<int64_t>{2999, 5, 5, 1024});
}

TEST_CASE("a take of a file that open read whole reads nothing more", "[format][take][reader]") {
  // mixed.vortex (25 KB) lies inside the tail that opening it read: its segments are served
  // from there, whole or in part, without a read.
  auto f = *format::VortexFile::open_path(seed_path("mixed.vortex"));
  REQUIRE(f->footer().tail_range.length == f->source().size());
  for (const uint64_t min_bytes : {0u, 1u}) {
    const TakeKnobs knobs(min_bytes);
    INFO("segments of at least " << min_bytes << " bytes in part");
    CHECK(bytes_read_by_a_small_take(*f) == 0);
  }
}

// The small corpus (ONECOPY_CORPUS_SMALL=1, corpus.py --small) has no multi_million file, so this
// case is tagged apart: scripts/test.sh then runs "[corpus]~[full-corpus]" and counts it skipped.
TEST_CASE("interop corpus: a take of a few rows reads only the chunks that hold them",
          "[.corpus][full-corpus]") {
  require_corpus();
  const auto path = corpus_dir() / "multi_million.default.vortex";
  if (!std::filesystem::exists(path)) {
    FAIL("no " << path.string()
               << ": the corpus was written small (corpus.py --small); rewrite it "
                  "in full, or leave this case out with onecopy-tests \"[corpus]~[full-corpus]\"");
  }
  auto f = *format::VortexFile::open_path(path.string());
  const uint64_t read = bytes_read_by_a_small_take(*f);
  INFO(path.string() << ": read " << read << " of " << f->source().size() << " bytes");
  // 23 chunks per column: three rows need at most three of them, well under half the file.
  CHECK(read < f->source().size() / 2);
}

TEST_CASE(
    "interop corpus: a scan without a filter delivers every batch before a corrupt chunk, then "
    "its error",
    "[.corpus][full-corpus]") {
  require_corpus();
  const auto path = corpus_dir() / "multi_million.default.vortex";
  if (!std::filesystem::exists(path)) {
    FAIL("no " << path.string() << ": the corpus was written small (corpus.py --small)");
  }
  std::ifstream in(path, std::ios::binary);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  auto whole = *format::VortexFile::open(format::memory_source(Buffer::copy_of(bytes)));
  // The first column's last chunk: struct -> zoned -> chunked -> the last flat chunk.
  format::LayoutPtr column = whole->footer().layout->children.at(0);
  while (column->encoding != "vortex.chunked") {
    REQUIRE(!column->children.empty());
    column = column->children[0];
  }
  REQUIRE(column->children.size() >= 3);
  uint64_t chunk_start = 0;
  for (size_t i = 0; i + 1 < column->children.size(); ++i)
    chunk_start += column->children[i]->row_count;
  const format::LayoutPtr& last = column->children.back();
  REQUIRE(last->encoding == "vortex.flat");
  // Its array footer's length (the segment's last four bytes) past the segment: corrupt.
  const format::ByteRange seg = whole->footer().segments.at(last->segments.at(0)).range();
  for (uint64_t i = seg.end() - 4; i < seg.end(); ++i) bytes[i] = 0xff;
  auto f = *format::VortexFile::open(format::memory_source(Buffer::copy_of(bytes)));
  // On one thread split by split; on four, run by run (LayoutReader::read_each) first.
  for (const uint32_t threads : {1u, 4u})
    for (const uint32_t in_flight : {0u, 1000u}) {
      INFO(threads << " threads, " << in_flight << " splits in flight (0: the default windows)");
      struct Threads {  // the knob for this scan, restored however the case ends
        Defaults saved = defaults();
        explicit Threads(uint32_t n) {
          Defaults d = saved;
          d.scan_decode_threads = n;
          set_defaults(d);
        }
        ~Threads() { set_defaults(saved); }
      } knob(threads);
      format::ScanOptions o;
      o.splits_in_flight = in_flight;  // 1000: every split in one window
      auto scan = f->scan(o);
      REQUIRE(scan.ok());
      uint64_t rows = 0;
      Result<std::optional<ColumnPtr>> b = (*scan)->next();
      for (; b.ok() && *b; b = (*scan)->next()) {
        CHECK(values_of<int64_t>(*slice((**b)->children[0], 0, 1)) ==
              std::vector<int64_t>{static_cast<int64_t>(rows)});  // id = row number
        rows += (**b)->length;
      }
      REQUIRE_FALSE(b.ok());
      CHECK(b.error().code() == Errc::corrupt);
      CHECK(rows == chunk_start);
    }
}

TEST_CASE(
    "interop corpus: a nullable struct layout without its validity child is refused, not read "
    "as all-valid",
    "[.corpus]") {
  uint64_t checked = 0;
  for (const auto& path : corpus_files()) {
    if (path.find("nested_some_nulls") == std::string::npos) continue;
    INFO(path);
    auto f = *format::VortexFile::open_path(path);
    const auto& t = f->dtype();
    const auto& layout = f->footer().layout;
    if (layout->encoding != "vortex.struct") continue;
    format::SegmentCache cache(f->source_ptr(), f->footer());
    const size_t first = layout->children.size() - t->children.size();
    for (size_t i = 0; i < t->children.size(); ++i) {
      const auto& field_t = t->children[i];
      const auto& field_l = layout->children[first + i];
      if (field_t->kind != format::TypeKind::struct_ || !field_t->nullable ||
          field_l->encoding != "vortex.struct") {
        continue;
      }
      INFO("field " << t->names[i]);
      REQUIRE(format::make_layout_reader(field_l, field_t, cache, 1).ok());
      // What vortex-data 0.36.0 wrote: the fields without the validity that leads them.
      auto stripped = std::make_shared<format::LayoutNode>(*field_l);
      stripped->children.erase(stripped->children.begin());
      auto r = format::make_layout_reader(stripped, field_t, cache, 1);
      REQUIRE(!r.ok());
      CHECK(r.error().code() == Errc::corrupt);
      CHECK(r.error().message().find("the validity of a nullable struct") != std::string::npos);
      ++checked;
    }
  }
  CHECK(checked > 0);
}

TEST_CASE(
    "interop corpus: independent starts begin a chunk of every column, and scans do not depend "
    "on the decode threads",
    "[.corpus]") {
  uint64_t files = 0, groups = 0;
  for (const auto& path : corpus_files()) {
    INFO(path);
    auto f = *format::VortexFile::open_path(path);
    const auto& t = f->dtype();
    const auto& layout = f->footer().layout;
    if (t->kind != format::TypeKind::struct_ || layout->encoding != "vortex.struct") continue;
    format::SegmentCache cache(f->source_ptr(), f->footer());
    auto root = f->open_reader(cache);
    REQUIRE(root.ok());
    const std::vector<uint64_t> common = (*root)->independent_starts();
    REQUIRE(!common.empty());
    CHECK(common.front() == 0);
    const size_t first = layout->children.size() - t->children.size();
    for (size_t i = 0; i < t->children.size(); ++i) {
      auto field =
          format::make_layout_reader(layout->children[first + i], t->children[i], cache, 1);
      REQUIRE(field.ok());
      std::vector<uint64_t> starts;
      (*field)->collect_splits(0, starts);
      for (uint64_t s : common) {
        if (s == 0) continue;  // where every column begins, chunks or none
        INFO("field " << t->names[i] << ", row " << s);
        CHECK(std::find(starts.begin(), starts.end(), s) != starts.end());
      }
    }
    groups += common.size();
    ++files;
    if (f->row_count() == 0) continue;
    // The same rows, in the same order, decoded on one thread and on four, any number of splits
    // at a time.
    std::vector<std::vector<std::string>> rows;
    for (const uint32_t threads : {1u, 4u}) {
      for (const uint32_t in_flight : {0u, 1u, 7u}) {
        INFO(threads << " threads, " << in_flight << " splits in flight");
        const Defaults saved = defaults();
        Defaults d = saved;
        d.scan_decode_threads = threads;
        set_defaults(d);
        auto all = scan_all(*f, in_flight);
        set_defaults(saved);
        REQUIRE(all.ok());
        rows.push_back(rows_of(**all));
        CHECK(rows.back() == rows.front());
      }
    }
  }
  INFO(files << " files, " << groups << " independent groups");
  CHECK(files > 0);
  CHECK(groups > files);  // some file has more than one group
}
