// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>

#include "format/patches.hpp"
#include "format/proto/patches.pb.h"
#include "tests/format/fixtures.hpp"

using namespace oc;
using namespace oc::test;
using format::DecodedPatches;

namespace {

pb::PatchesMetadata patches_meta(uint64_t len, uint64_t offset, PType indices) {
  pb::PatchesMetadata m;
  m.set_len(len);
  m.set_offset(offset);
  m.set_indices_ptype(static_cast<uint32_t>(indices));
  return m;
}

Result<DecodedPatches> decode_patches_of(const ArrayView& parent, const pb::PatchesMetadata& m,
                                         const DTypePtr& t, uint64_t array_len, size_t& used) {
  format::DecodeContext ctx;
  return format::decode_patches(parent, 0, m, t, array_len, ctx, used);
}

ColumnPtr utf8_column(const std::vector<std::string>& strings) {
  auto c = std::make_shared<format::Column>();
  c->dtype = DType::make_utf8(false);
  c->length = strings.size();
  std::vector<int32_t> offsets{0};
  std::string bytes;
  for (const auto& s : strings) {
    bytes += s;
    offsets.push_back(static_cast<int32_t>(bytes.size()));
  }
  c->buffers = {buffer_of(offsets), bytes_of(bytes)};
  return c;
}

}  // namespace

TEST_CASE("patches decode indices minus offset and their values", "[format][patches]") {
  const auto t = DType::make_primitive(PType::i32, false);
  auto parent =
      node("test.parent", {}, {},
           {primitive_node<uint16_t>({12, 15, 19}), primitive_node<int32_t>({-1, -2, -3})});
  size_t used = 0;
  auto p = decode_patches_of(parent, patches_meta(3, 10, PType::u16), t, 10, used);
  REQUIRE(p.ok());
  CHECK(used == 2);
  CHECK(p->positions == std::vector<uint64_t>{2, 5, 9});
  CHECK(values_of<int32_t>(*p->values) == std::vector<int32_t>{-1, -2, -3});

  auto base = decode(primitive_node<int32_t>({0, 1, 2, 3, 4, 5, 6, 7, 8, 9}), t, 10);
  REQUIRE(base.ok());
  auto patched = format::apply_patches(*base, *p);
  REQUIRE(patched.ok());
  CHECK(values_of<int32_t>(**patched) == std::vector<int32_t>{0, 1, -1, 3, 4, -2, 6, 7, 8, -3});
  CHECK((*patched)->null_count == 0);
}

TEST_CASE("patches decode a chunk-offsets child of its dtype and length", "[format][patches]") {
  auto m = patches_meta(1, 0, PType::u8);
  m.set_chunk_offsets_len(1);
  m.set_chunk_offsets_ptype(static_cast<uint32_t>(PType::u64));
  auto parent = node("test.parent", {}, {},
                     {primitive_node<uint8_t>({3}), primitive_node<uint64_t>({77}),
                      primitive_node<uint64_t>({0})});
  size_t used = 0;
  auto p = decode_patches_of(parent, m, DType::make_primitive(PType::u64, false), 4, used);
  REQUIRE(p.ok());
  CHECK(used == 3);
  CHECK(p->positions == std::vector<uint64_t>{3});

  parent.children.pop_back();
  CHECK(decode_patches_of(parent, m, DType::make_primitive(PType::u64, false), 4, used)
            .error()
            .code() == Errc::corrupt);

  // vortex-data decodes the chunk offsets as chunk_offsets_len non-nullable values of their
  // ptype: a child of another length, or with a validity, is corrupt.
  parent.children.push_back(primitive_node<uint64_t>({0, 1}));
  auto r = decode_patches_of(parent, m, DType::make_primitive(PType::u64, false), 4, used);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code() == Errc::corrupt);
  CHECK(r.error().to_string().find("chunk offsets") != std::string::npos);
  parent.children.back() = primitive_node<uint64_t>({0});
  parent.children.back().children.push_back(bool_node({true}));
  CHECK(decode_patches_of(parent, m, DType::make_primitive(PType::u64, false), 4, used)
            .error()
            .code() == Errc::corrupt);
}

TEST_CASE("patches metadata with no patches is corrupt, as vortex-data refuses it",
          "[format][patches]") {
  // vortex-data: "Patch indices must not be empty".
  auto parent =
      node("test.parent", {}, {}, {primitive_node<uint8_t>({}), primitive_node<uint8_t>({})});
  size_t used = 0;
  auto r = decode_patches_of(parent, patches_meta(0, 0, PType::u8),
                             DType::make_primitive(PType::u8, false), 3, used);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code() == Errc::corrupt);
  CHECK(r.error().to_string().find("no patches") != std::string::npos);
}

TEST_CASE("patches reject hostile indices", "[format][patches]") {
  const auto t = DType::make_primitive(PType::u8, false);
  size_t used = 0;
  auto with_indices = [&](std::vector<uint32_t> idx, uint64_t offset, uint64_t array_len) {
    std::vector<uint8_t> vals(idx.size(), 1);
    auto parent = node("test.parent", {}, {}, {primitive_node(idx), primitive_node(vals)});
    return decode_patches_of(parent, patches_meta(idx.size(), offset, PType::u32), t, array_len,
                             used);
  };
  CHECK(with_indices({1, 2}, 0, 3).ok());
  CHECK(with_indices({1, 3}, 0, 3).error().code() == Errc::corrupt);        // past the end
  CHECK(with_indices({4, 5}, 5, 3).error().code() == Errc::corrupt);        // below the offset
  CHECK(with_indices({2, 1}, 0, 3).error().code() == Errc::corrupt);        // not ascending
  CHECK(with_indices({1, 1}, 0, 3).error().code() == Errc::corrupt);        // duplicate
  CHECK(with_indices({0, 1, 2, 3}, 0, 3).error().code() == Errc::corrupt);  // more than rows

  auto parent =
      node("test.parent", {}, {}, {primitive_node<int32_t>({1}), primitive_node<uint8_t>({1})});
  CHECK(decode_patches_of(parent, patches_meta(1, 0, PType::i32), t, 3, used).error().code() ==
        Errc::corrupt);
  // A length that disagrees with the indices child is caught by the child's decoder.
  CHECK(decode_patches_of(parent, patches_meta(2, 0, PType::u32), t, 3, used).error().code() ==
        Errc::corrupt);
}

TEST_CASE("applied patches carry their validity", "[format][patches]") {
  const auto t = DType::make_primitive(PType::i64, true);
  auto base_node = primitive_node<int64_t>({10, 11, 12, 13});
  base_node.children.push_back(bool_node({true, false, true, true}));
  auto base = decode(base_node, t, 4);
  REQUIRE(base.ok());
  auto values_node = primitive_node<int64_t>({-1, -3});
  values_node.children.push_back(bool_node({true, false}));
  auto values = decode(values_node, t, 2);
  REQUIRE(values.ok());

  auto patched = format::apply_patches(*base, DecodedPatches{{1, 3}, *values});
  REQUIRE(patched.ok());
  CHECK(validity_of(**patched) == std::vector<bool>{true, true, true, false});
  CHECK((*patched)->null_count == 1);
  CHECK(values_of<int64_t>(**patched)[1] == -1);
  CHECK(values_of<int64_t>(**patched)[2] == 12);
}

TEST_CASE("patches apply to sliced bool and string columns", "[format][patches]") {
  auto bools = decode(bool_node({false, false, false, false, false}), DType::make_bool(false), 5);
  REQUIRE(bools.ok());
  auto bool_values = decode(bool_node({true}), DType::make_bool(false), 1);
  REQUIRE(bool_values.ok());
  auto patched =
      format::apply_patches(format::slice(*bools, 1, 4), DecodedPatches{{2}, *bool_values});
  REQUIRE(patched.ok());
  CHECK(bools_of(**patched) == std::vector<bool>{false, false, true, false});

  auto strings = format::slice(utf8_column({"x", "a", "b", "c"}), 1, 3);
  auto patched_strings =
      format::apply_patches(strings, DecodedPatches{{0, 2}, utf8_column({"AA", ""})});
  REQUIRE(patched_strings.ok());
  CHECK(strings_of(**patched_strings) == std::vector<std::string>{"AA", "b", ""});
}

TEST_CASE("apply_patches rejects mismatched inputs", "[format][patches]") {
  auto base = decode(primitive_node<int32_t>({1, 2}), DType::make_primitive(PType::i32, false), 2);
  REQUIRE(base.ok());
  auto wide = decode(primitive_node<int64_t>({9}), DType::make_primitive(PType::i64, false), 1);
  REQUIRE(wide.ok());
  CHECK(format::apply_patches(*base, DecodedPatches{{0}, *wide}).error().code() == Errc::invalid);
  auto narrow = decode(primitive_node<int32_t>({9}), DType::make_primitive(PType::i32, false), 1);
  REQUIRE(narrow.ok());
  CHECK(format::apply_patches(*base, DecodedPatches{{2}, *narrow}).error().code() == Errc::invalid);
}
