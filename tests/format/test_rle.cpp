// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>

#include "format/proto/rle.pb.h"
#include "tests/format/fixtures.hpp"

using namespace oc;
using namespace oc::test;

namespace {

std::string rle_meta(uint64_t values, uint64_t indices, PType index_ptype, uint64_t blocks,
                     PType offsets_ptype, uint64_t offset) {
  pb::RleMetadata m;
  m.set_values_len(values);
  m.set_indices_len(indices);
  m.set_indices_ptype(static_cast<uint32_t>(index_ptype));
  m.set_values_idx_offsets_len(blocks);
  m.set_values_idx_offsets_ptype(static_cast<uint32_t>(offsets_ptype));
  m.set_offset(offset);
  return m.SerializeAsString();
}

/// Two blocks: block 0 runs 10 (rows 0..99), 20 (100..1023); block 1 holds the single value 30.
/// Values are stored as a slice of a longer list, so the offsets start at 5 and are rebased.
ArrayView two_block_rle(uint64_t offset, std::vector<bool> index_validity = {}) {
  std::vector<uint16_t> indices(2048, 0);
  for (size_t i = 100; i < 1024; ++i) indices[i] = 1;
  for (size_t i = 1024; i < 2048; ++i) indices[i] = 7;  // ignored: a single-value block
  auto index_node = primitive_node(indices);
  if (!index_validity.empty()) index_node.children.push_back(bool_node(index_validity));
  return node(
      "fastlanes.rle", rle_meta(3, 2048, PType::u16, 2, PType::u32, offset), {},
      {primitive_node<int64_t>({10, 20, 30}), index_node, primitive_node<uint32_t>({5, 7})});
}

}  // namespace

TEST_CASE("fastlanes.rle expands runs per block", "[format][rle]") {
  auto c = decode(two_block_rle(0), DType::make_primitive(PType::i64, false), 2048);
  REQUIRE(c.ok());
  auto v = values_of<int64_t>(**c);
  CHECK(v[0] == 10);
  CHECK(v[99] == 10);
  CHECK(v[100] == 20);
  CHECK(v[1023] == 20);
  CHECK(v[1024] == 30);
  CHECK(v[2047] == 30);
}

TEST_CASE("fastlanes.rle honours its offset and takes validity from the indices", "[format][rle]") {
  std::vector<bool> valid(2048, true);
  valid[101] = false;
  auto c = decode(two_block_rle(99, valid), DType::make_primitive(PType::i64, true), 1000);
  REQUIRE(c.ok());
  auto v = values_of<int64_t>(**c);
  CHECK(v[0] == 10);
  CHECK(v[1] == 20);
  CHECK(v[999] == 30);  // row 1098 of the blocks
  CHECK(validity_of(**c)[2] == false);
  CHECK((*c)->null_count == 1);
}

TEST_CASE("fastlanes.rle decodes float values", "[format][rle]") {
  auto n = node("fastlanes.rle", rle_meta(2, 1024, PType::u8, 1, PType::u8, 0), {},
                {primitive_node<double>({1.5, -2.5}), primitive_node(std::vector<uint8_t>(1024, 1)),
                 primitive_node<uint8_t>({0})});
  auto c = decode(n, DType::make_primitive(PType::f64, false), 3);
  REQUIRE(c.ok());
  CHECK(values_of<double>(**c) == std::vector<double>{-2.5, -2.5, -2.5});
}

TEST_CASE("fastlanes.rle rejects hostile input", "[format][rle]") {
  const auto i64 = DType::make_primitive(PType::i64, false);
  auto with_meta = [](ArrayView n, const std::string& m) {
    n.metadata.assign(m.begin(), m.end());
    return n;
  };
  auto n = two_block_rle(0);
  CHECK(decode(n, i64, 2048).ok());
  CHECK(decode(n, i64, 2049).error().code() == Errc::corrupt);  // past the indices
  CHECK(decode(with_meta(n, rle_meta(3, 2048, PType::u16, 2, PType::u32, 1024)), i64, 10)
            .error()
            .code() == Errc::corrupt);
  CHECK(decode(with_meta(n, rle_meta(3, 2048, PType::u32, 2, PType::u32, 0)), i64, 10)
            .error()
            .code() == Errc::corrupt);  // indices must be u8 or u16
  CHECK(decode(with_meta(n, rle_meta(3, 2048, PType::u16, 2, PType::i32, 0)), i64, 10)
            .error()
            .code() == Errc::corrupt);  // offsets must be unsigned
  CHECK(decode(with_meta(n, rle_meta(3, 2000, PType::u16, 2, PType::u32, 0)), i64, 10)
            .error()
            .code() == Errc::corrupt);  // partial block of indices

  // An index past its block's values.
  std::vector<uint16_t> indices(1024, 0);
  indices[5] = 2;
  auto bad = node(
      "fastlanes.rle", rle_meta(2, 1024, PType::u16, 1, PType::u32, 0), {},
      {primitive_node<int64_t>({1, 2}), primitive_node(indices), primitive_node<uint32_t>({0})});
  CHECK(decode(bad, i64, 1024).error().code() == Errc::corrupt);
  // Offsets that run backwards.
  auto backwards = two_block_rle(0);
  backwards.children[2] = primitive_node<uint32_t>({5, 4});
  CHECK(decode(backwards, i64, 2048).error().code() == Errc::corrupt);
}

TEST_CASE("fastlanes.rle golden metadata parses field by field", "[format][rle]") {
  // vortex encodings/fastlanes/goldenfiles/rle.metadata: every field at its maximum.
  const std::string golden(
      "\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01\x10\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01"
      "\x18\xff\xff\xff\xff\x07\x20\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01\x28\xff\xff\xff\xff\x07"
      "\x30\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01",
      56);
  pb::RleMetadata m;
  REQUIRE(m.ParseFromString(golden));
  CHECK(m.values_len() == UINT64_MAX);
  CHECK(m.indices_len() == UINT64_MAX);
  CHECK(m.indices_ptype() == 0x7fffffffu);
  CHECK(m.values_idx_offsets_len() == UINT64_MAX);
  CHECK(m.values_idx_offsets_ptype() == 0x7fffffffu);
  CHECK(m.offset() == UINT64_MAX);
  auto n = two_block_rle(0);
  n.metadata.assign(golden.begin(), golden.end());
  CHECK(decode(n, DType::make_primitive(PType::i64, false), 10).error().code() == Errc::corrupt);
}
