// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>

#include "format/proto/scalar.pb.h"
#include "format/proto/sparse.pb.h"
#include "tests/format/alp_golden.hpp"
#include "tests/format/fixtures.hpp"

using namespace oc;
using namespace oc::test;

namespace {

std::string sparse_metadata(uint64_t patches, uint64_t offset = 0, PType indices = PType::u8) {
  pb::SparseMetadata m;
  m.mutable_patches()->set_len(patches);
  m.mutable_patches()->set_offset(offset);
  m.mutable_patches()->set_indices_ptype(static_cast<uint32_t>(indices));
  return m.SerializeAsString();
}

Buffer int_fill(int64_t v) {
  pb::ScalarValue s;
  s.set_int64_value(v);
  return bytes_of(s.SerializeAsString());
}

Buffer null_fill() {
  pb::ScalarValue s;
  s.set_null_value(pb::NULL_VALUE);
  return bytes_of(s.SerializeAsString());
}

}  // namespace

TEST_CASE("vortex.sparse golden segments", "[format][sparse]") {
  alp_golden::check("sparse_i64");
  auto c = alp_golden::check("sparse_f64_nulls");
  CHECK(c->null_count == static_cast<int64_t>(c->length) - 16);
  // Strings (needs vortex.varbinview).
  alp_golden::check("sparse_utf8_nulls");
}

TEST_CASE("vortex.sparse lays patches over the fill value", "[format][sparse]") {
  const auto i64 = DType::make_primitive(PType::i64, false);
  auto n = node("vortex.sparse", sparse_metadata(2), {int_fill(5)},
                {primitive_node<uint8_t>({1, 3}), primitive_node<int64_t>({10, 20})});
  auto c = decode(n, i64, 5);
  REQUIRE(c.ok());
  CHECK(values_of<int64_t>(**c) == std::vector<int64_t>{5, 10, 5, 20, 5});

  // Stored indices are shifted by the patch offset (a sliced array).
  n = node("vortex.sparse", sparse_metadata(2, 100), {int_fill(-1)},
           {primitive_node<uint16_t>({100, 104}), primitive_node<int64_t>({7, 8})});
  n.metadata.clear();
  const std::string meta = sparse_metadata(2, 100, PType::u16);
  n.metadata.assign(meta.begin(), meta.end());
  c = decode(n, i64, 5);
  REQUIRE(c.ok());
  CHECK(values_of<int64_t>(**c) == std::vector<int64_t>{7, -1, -1, -1, 8});
}

TEST_CASE("vortex.sparse with a null fill value", "[format][sparse]") {
  auto values = bool_node({true, false});
  values.children.push_back(bool_node({true, true}));
  auto n = node("vortex.sparse", sparse_metadata(2), {null_fill()},
                {primitive_node<uint8_t>({0, 2}), values});
  auto c = decode(n, DType::make_bool(true), 4);
  REQUIRE(c.ok());
  CHECK(validity_of(**c) == std::vector<bool>{true, false, true, false});
  CHECK((*c)->null_count == 2);
  CHECK(bools_of(**c)[0]);
  CHECK_FALSE(bools_of(**c)[2]);
}

TEST_CASE("vortex.sparse without patches is corrupt, as vortex-data refuses it",
          "[format][sparse]") {
  // vortex-data 0.93: "Patch indices must not be empty" (writers emit a constant instead).
  auto n = node("vortex.sparse", sparse_metadata(0), {null_fill()},
                {primitive_node<uint8_t>({}), primitive_node<int32_t>({})});
  auto c = decode(n, DType::make_primitive(PType::i32, true), 3);
  REQUIRE_FALSE(c.ok());
  CHECK(c.error().code() == Errc::corrupt);
  CHECK(c.error().to_string().find("no patches") != std::string::npos);
}

TEST_CASE("vortex.sparse rejects malformed nodes", "[format][sparse]") {
  const auto i64 = DType::make_primitive(PType::i64, false);
  auto expect_corrupt = [&](ArrayView n, uint64_t len) {
    auto c = decode(n, i64, len);
    REQUIRE_FALSE(c.ok());
    CHECK(c.error().code() == Errc::corrupt);
  };
  const std::vector<ArrayView> children = {primitive_node<uint8_t>({1}),
                                           primitive_node<int64_t>({9})};
  // A null fill for a non-nullable type; no fill buffer; a fill that is not a scalar.
  expect_corrupt(node("vortex.sparse", sparse_metadata(1), {null_fill()}, children), 3);
  expect_corrupt(node("vortex.sparse", sparse_metadata(1), {}, children), 3);
  expect_corrupt(node("vortex.sparse", sparse_metadata(1), {bytes_of("\xff")}, children), 3);
  // A patch index past the end, or below the offset; patches out of order.
  expect_corrupt(node("vortex.sparse", sparse_metadata(1), {int_fill(0)}, children), 1);
  expect_corrupt(node("vortex.sparse", sparse_metadata(1, 2), {int_fill(0)}, children), 3);
  expect_corrupt(node("vortex.sparse", sparse_metadata(2), {int_fill(0)},
                      {primitive_node<uint8_t>({2, 1}), primitive_node<int64_t>({1, 2})}),
                 3);
  // Chunk offsets are not part of sparse patches.
  pb::SparseMetadata chunked;
  chunked.mutable_patches()->set_len(1);
  chunked.mutable_patches()->set_indices_ptype(static_cast<uint32_t>(PType::u8));
  chunked.mutable_patches()->set_chunk_offsets_len(1);
  chunked.mutable_patches()->set_chunk_offsets_ptype(static_cast<uint32_t>(PType::u8));
  auto with_offsets = children;
  with_offsets.push_back(primitive_node<uint8_t>({0}));
  expect_corrupt(node("vortex.sparse", chunked.SerializeAsString(), {int_fill(0)}, with_offsets),
                 3);
  expect_corrupt(node("vortex.sparse", chunked.SerializeAsString(), {int_fill(0)}, children), 3);
}
