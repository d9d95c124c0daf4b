// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>

#include "format/proto/onpair.pb.h"
#include "tests/format/fixtures.hpp"
#include "tests/format/strings_golden.hpp"

using namespace oc;
using namespace oc::test;

namespace {

// Tokens "ab" (0), "c" (1) and "hello" (2), then padding as the writer leaves it.
const std::string kDictBytes = std::string("abchello") + std::string(11, '\0');
const std::vector<uint32_t> kDictOffsets = {0, 2, 3, 8};

// A hand-built OnPair node with u32 dict offsets, u16 codes, u32 codes offsets and u32 lengths.
struct Parts {
  std::vector<uint32_t> dict_offsets = kDictOffsets;
  std::vector<uint16_t> codes;
  std::vector<uint32_t> codes_offsets;
  std::vector<uint32_t> lengths;
  pb::OnPairMetadata meta;

  Parts(std::vector<uint16_t> c, std::vector<uint32_t> co, std::vector<uint32_t> l)
      : codes(std::move(c)), codes_offsets(std::move(co)), lengths(std::move(l)) {
    meta.set_uncompressed_lengths_ptype(static_cast<int32_t>(PType::u32));
    meta.set_bits(12);
    meta.set_dict_size(static_cast<uint32_t>(dict_offsets.size() - 1));
    meta.set_total_tokens(codes.size());
    meta.set_dict_offsets_ptype(static_cast<int32_t>(PType::u32));
    meta.set_codes_ptype(static_cast<int32_t>(PType::u16));
    meta.set_codes_offsets_ptype(static_cast<int32_t>(PType::u32));
  }

  ArrayView node() const {
    return test::node("vortex.onpair", meta.SerializeAsString(), {bytes_of(kDictBytes)},
                      {primitive_node(dict_offsets), primitive_node(codes),
                       primitive_node(codes_offsets), primitive_node(lengths)});
  }
};

Errc error_of(const ArrayView& n, uint64_t len) {
  auto c = decode(n, DType::make_utf8(false), len);
  REQUIRE(!c.ok());
  return c.error().code();
}

}  // namespace

TEST_CASE("vortex.onpair golden segments decode like the oracle", "[format][onpair]") {
  strings_golden::check("onpair_emails_nulls", DType::make_utf8(true));
  strings_golden::check("onpair_words", DType::make_utf8(false));
  strings_golden::check("onpair_unicode", DType::make_utf8(false));
  strings_golden::check("onpair_binary", DType::make_binary(false));
}

TEST_CASE("vortex.onpair golden segments carry the expected shape", "[format][onpair]") {
  // The nullable case has the optional validity child, and its codes fit in u8.
  auto g = strings_golden::load("onpair_emails_nulls");
  CHECK(g.root.encoding == "vortex.onpair");
  CHECK(g.root.children.size() == 5);
  auto meta = format::parse_metadata<pb::OnPairMetadata>(g.root.metadata, "onpair");
  REQUIRE(meta.ok());
  CHECK(meta->codes_ptype() == static_cast<int32_t>(PType::u8));
  CHECK(meta->dict_offsets_ptype() == static_cast<int32_t>(PType::u16));
  CHECK(meta->total_tokens() > g.rows.size());
}

TEST_CASE("vortex.onpair metadata matches the upstream golden bytes", "[format][onpair]") {
  // encodings/experimental/onpair/goldenfiles/onpair.metadata in vortex-data/vortex.
  const std::string golden = "\x08\x06\x10\x0c\x18\x80\x20\x20\x80\xe8\x07\x28\x02\x30\x01\x38\x02";
  auto m = format::parse_metadata<pb::OnPairMetadata>(
      {reinterpret_cast<const uint8_t*>(golden.data()), golden.size()}, "onpair");
  REQUIRE(m.ok());
  CHECK(m->uncompressed_lengths_ptype() == static_cast<int32_t>(PType::i32));
  CHECK(m->bits() == 12);
  CHECK(m->dict_size() == 4096);
  CHECK(m->total_tokens() == 128000);
  CHECK(m->dict_offsets_ptype() == static_cast<int32_t>(PType::u32));
  CHECK(m->codes_ptype() == static_cast<int32_t>(PType::u16));
  CHECK(m->codes_offsets_ptype() == static_cast<int32_t>(PType::u32));
}

TEST_CASE("vortex.onpair decodes hand-built rows", "[format][onpair]") {
  // "abc", "hello", "", "ab"
  Parts p({0, 1, 2, 0}, {0, 2, 3, 3, 4}, {3, 5, 0, 2});
  auto c = decode(p.node(), DType::make_utf8(false), 4);
  REQUIRE(c.ok());
  CHECK(strings_of(**c) == std::vector<std::string>{"abc", "hello", "", "ab"});
  CHECK((*c)->null_count == 0);

  SECTION("binary") {
    c = decode(p.node(), DType::make_binary(false), 4);
    REQUIRE(c.ok());
    CHECK(strings_of(**c) == std::vector<std::string>{"abc", "hello", "", "ab"});
  }
  SECTION("nulls from the validity child") {
    Parts q({0, 1, 2}, {0, 2, 2, 3}, {3, 0, 5});
    ArrayView n = q.node();
    n.children.push_back(bool_node({true, false, true}));
    c = decode(n, DType::make_utf8(true), 3);
    REQUIRE(c.ok());
    CHECK(validity_of(**c) == std::vector<bool>{true, false, true});
    CHECK((*c)->null_count == 1);
    CHECK(strings_of(**c) == std::vector<std::string>{"abc", "", "hello"});
  }
  SECTION("a window of the codes, as a sliced array keeps them") {
    // Code 2 before the window and code 1 after it are not part of any row.
    Parts q({2, 1, 2, 0, 1}, {1, 2, 4}, {1, 7});
    c = decode(q.node(), DType::make_utf8(false), 2);
    REQUIRE(c.ok());
    CHECK(strings_of(**c) == std::vector<std::string>{"c", "helloab"});
  }
  SECTION("empty array and empty dictionary") {
    Parts q({}, {0}, {});
    q.dict_offsets = {0};
    q.meta.set_dict_size(0);
    c = decode(q.node(), DType::make_utf8(false), 0);
    REQUIRE(c.ok());
    CHECK((*c)->length == 0);
    CHECK((*c)->offsets()[0] == 0);
  }
}

TEST_CASE("vortex.onpair rejects codes that disagree with the rows", "[format][onpair]") {
  // Code 3 names no token.
  CHECK(error_of(Parts({0, 3}, {0, 2}, {3}).node(), 1) == Errc::corrupt);
  // The row lengths add up to fewer, or more, bytes than the codes decode to.
  CHECK(error_of(Parts({0, 2}, {0, 2}, {6}).node(), 1) == Errc::corrupt);
  CHECK(error_of(Parts({0, 2}, {0, 2}, {8}).node(), 1) == Errc::corrupt);
  // The totals agree (8 bytes) but the rows do not: row 0's codes decode to "ab" (it says 3
  // bytes), row 1's to "chello" (it says 5). Checking totals only shifted bytes between rows.
  CHECK(error_of(Parts({0, 1, 2}, {0, 1, 3}, {3, 5}).node(), 2) == Errc::corrupt);
  // Inner codes offsets that run backwards.
  CHECK(error_of(Parts({0, 1, 2}, {0, 3, 1, 3}, {3, 0, 5}).node(), 3) == Errc::corrupt);
  // The codes window ends past the codes, or runs backwards.
  CHECK(error_of(Parts({0, 2}, {0, 3}, {7}).node(), 1) == Errc::corrupt);
  CHECK(error_of(Parts({0, 2}, {2, 0}, {0}).node(), 1) == Errc::corrupt);
  // total_tokens disagrees with the codes child.
  Parts p({0, 2}, {0, 2}, {7});
  p.meta.set_total_tokens(3);
  CHECK(error_of(p.node(), 1) == Errc::corrupt);
}

TEST_CASE("vortex.onpair rejects malformed dictionaries", "[format][onpair]") {
  Parts p({0, 2}, {0, 2}, {7});
  REQUIRE(decode(p.node(), DType::make_utf8(false), 1).ok());
  SECTION("offsets decrease") {
    p.dict_offsets = {0, 3, 2, 8};
    CHECK(error_of(p.node(), 1) == Errc::corrupt);
  }
  SECTION("offsets end past the dictionary bytes") {
    p.dict_offsets = {0, 2, 3, static_cast<uint32_t>(kDictBytes.size() + 1)};
    CHECK(error_of(p.node(), 1) == Errc::corrupt);
  }
  SECTION("dict_size disagrees with the offsets child") {
    p.meta.set_dict_size(4);
    CHECK(error_of(p.node(), 1) == Errc::corrupt);
  }
  SECTION("a dictionary too large to allocate") {
    p.meta.set_dict_size(UINT32_MAX);
    CHECK(error_of(p.node(), 1) == Errc::corrupt);
  }
  SECTION("more codes than can be allocated") {
    p.meta.set_total_tokens(UINT64_MAX);
    CHECK(error_of(p.node(), 1) == Errc::corrupt);
  }
}

TEST_CASE("vortex.onpair rejects malformed nodes", "[format][onpair]") {
  Parts p({0, 2}, {0, 2}, {7});
  SECTION("a float or unknown child ptype") {
    p.meta.set_codes_ptype(static_cast<int32_t>(PType::f32));
    CHECK(error_of(p.node(), 1) == Errc::corrupt);
    p.meta.set_codes_ptype(99);
    CHECK(error_of(p.node(), 1) == Errc::corrupt);
    p.meta.set_codes_ptype(-1);
    CHECK(error_of(p.node(), 1) == Errc::corrupt);
  }
  SECTION("negative lengths") {
    p.meta.set_uncompressed_lengths_ptype(static_cast<int32_t>(PType::i32));
    p.lengths = {static_cast<uint32_t>(-7)};
    CHECK(error_of(p.node(), 1) == Errc::corrupt);
  }
  SECTION("wrong number of buffers or children") {
    ArrayView n = p.node();
    n.buffers.push_back(bytes_of("x"));
    CHECK(error_of(n, 1) == Errc::corrupt);
    n = p.node();
    n.children.pop_back();
    CHECK(error_of(n, 1) == Errc::corrupt);
  }
  SECTION("metadata that is not protobuf") {
    ArrayView n = p.node();
    n.metadata = {0xff, 0xff, 0xff};
    CHECK(error_of(n, 1) == Errc::corrupt);
  }
  SECTION("a non-string dtype") {
    auto c = decode(p.node(), DType::make_primitive(PType::i32, false), 1);
    REQUIRE(!c.ok());
    CHECK(c.error().code() == Errc::corrupt);
  }
}
