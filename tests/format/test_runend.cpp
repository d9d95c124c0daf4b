// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>
#include <limits>

#include "format/proto/runend.pb.h"
#include "tests/format/alp_golden.hpp"
#include "tests/format/fixtures.hpp"

using namespace oc;
using namespace oc::test;

namespace {

std::string runend_metadata(PType ends, uint64_t runs, uint64_t offset = 0) {
  pb::RunEndMetadata m;
  m.set_ends_ptype(static_cast<uint32_t>(ends));
  m.set_num_runs(runs);
  m.set_offset(offset);
  return m.SerializeAsString();
}

}  // namespace

TEST_CASE("vortex.runend metadata parses the upstream golden bytes", "[format][runend]") {
  // encodings/runend/goldenfiles/runend.metadata: ends_ptype = u64, num_runs = offset = u64::MAX.
  const std::vector<uint8_t> golden = {0x08, 0x03, 0x10, 0xff, 0xff, 0xff, 0xff, 0xff,
                                       0xff, 0xff, 0xff, 0xff, 0x01, 0x18, 0xff, 0xff,
                                       0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
  auto m = format::parse_metadata<pb::RunEndMetadata>(golden, "vortex.runend");
  REQUIRE(m.ok());
  CHECK(m->ends_ptype() == static_cast<uint32_t>(PType::u64));
  CHECK(m->num_runs() == std::numeric_limits<uint64_t>::max());
  CHECK(m->offset() == std::numeric_limits<uint64_t>::max());
  const std::string again = m->SerializeAsString();
  CHECK(std::vector<uint8_t>(again.begin(), again.end()) == golden);

  // That many runs can never be allocated.
  auto n = node("vortex.runend", std::string(golden.begin(), golden.end()), {},
                {primitive_node<uint64_t>({1}), primitive_node<int32_t>({1})});
  auto c = decode(n, DType::make_primitive(PType::i32, false), 1);
  REQUIRE_FALSE(c.ok());
  CHECK(c.error().code() == Errc::corrupt);
}

TEST_CASE("vortex.runend golden segments", "[format][runend]") {
  alp_golden::check("runend_i64");
  // Dictionary codes as runs, some runs null (needs vortex.dict).
  auto c = alp_golden::check("runend_codes_nulls");
  CHECK(c->null_count > 0);
}

TEST_CASE("vortex.runend expands runs from an offset", "[format][runend]") {
  auto n = node("vortex.runend", runend_metadata(PType::u32, 3), {},
                {primitive_node<uint32_t>({2, 5, 6}), primitive_node<int32_t>({7, 8, 9})});
  const auto i32 = DType::make_primitive(PType::i32, false);
  auto c = decode(n, i32, 6);
  REQUIRE(c.ok());
  CHECK(values_of<int32_t>(**c) == std::vector<int32_t>{7, 7, 8, 8, 8, 9});

  // A slice of rows 1..4 keeps all runs: the last one is clipped away.
  n.metadata.clear();
  const std::string sliced = runend_metadata(PType::u32, 3, 1);
  n.metadata.assign(sliced.begin(), sliced.end());
  c = decode(n, i32, 4);
  REQUIRE(c.ok());
  CHECK(values_of<int32_t>(**c) == std::vector<int32_t>{7, 8, 8, 8});

  // One run, one row.
  c = decode(node("vortex.runend", runend_metadata(PType::u8, 1), {},
                  {primitive_node<uint8_t>({1}), primitive_node<int32_t>({-4})}),
             i32, 1);
  REQUIRE(c.ok());
  CHECK(values_of<int32_t>(**c) == std::vector<int32_t>{-4});
}

TEST_CASE("vortex.runend carries null runs and bool values", "[format][runend]") {
  auto values = primitive_node<double>({1.5, 0.0, 2.5});
  values.children.push_back(bool_node({true, false, true}));
  auto n = node("vortex.runend", runend_metadata(PType::u16, 3), {},
                {primitive_node<uint16_t>({1, 3, 4}), values});
  auto c = decode(n, DType::make_primitive(PType::f64, true), 4);
  REQUIRE(c.ok());
  CHECK(validity_of(**c) == std::vector<bool>{true, false, false, true});
  CHECK((*c)->null_count == 2);
  CHECK(values_of<double>(**c)[3] == 2.5);

  n = node("vortex.runend", runend_metadata(PType::u64, 2), {},
           {primitive_node<uint64_t>({3, 5}), bool_node({true, false})});
  c = decode(n, DType::make_bool(false), 5);
  REQUIRE(c.ok());
  CHECK(bools_of(**c) == std::vector<bool>{true, true, true, false, false});
}

TEST_CASE("vortex.runend decodes empty arrays, with or without runs", "[format][runend]") {
  const auto i32 = DType::make_primitive(PType::i32, false);
  auto c = decode(node("vortex.runend", runend_metadata(PType::u8, 0), {},
                       {primitive_node<uint8_t>({}), primitive_node<int32_t>({})}),
                  i32, 0);
  REQUIRE(c.ok());
  CHECK((*c)->length == 0);
  c = decode(node("vortex.runend", runend_metadata(PType::u8, 1, 3), {},
                  {primitive_node<uint8_t>({3}), primitive_node<int32_t>({1})}),
             i32, 0);
  REQUIRE(c.ok());
  CHECK((*c)->length == 0);
}

TEST_CASE("vortex.runend with no runs has no offset, as vortex-data checks", "[format][runend]") {
  auto c = decode(node("vortex.runend", runend_metadata(PType::u8, 0, 2), {},
                       {primitive_node<uint8_t>({}), primitive_node<int32_t>({})}),
                  DType::make_primitive(PType::i32, false), 0);
  REQUIRE_FALSE(c.ok());
  CHECK(c.error().code() == Errc::corrupt);
  CHECK(c.error().to_string().find("no runs") != std::string::npos);
}

TEST_CASE("vortex.runend rejects malformed runs", "[format][runend]") {
  const auto i32 = DType::make_primitive(PType::i32, false);
  auto expect_corrupt = [&](const std::string& meta, std::vector<ArrayView> children,
                            uint64_t len) {
    auto c = decode(node("vortex.runend", meta, {}, std::move(children)), i32, len);
    REQUIRE_FALSE(c.ok());
    CHECK(c.error().code() == Errc::corrupt);
  };
  const auto values = primitive_node<int32_t>({1, 2});
  // Ends not strictly ascending.
  expect_corrupt(runend_metadata(PType::u8, 2), {primitive_node<uint8_t>({3, 3}), values}, 3);
  // Runs that stop short of the length.
  expect_corrupt(runend_metadata(PType::u8, 2), {primitive_node<uint8_t>({1, 2}), values}, 3);
  // A run that ends before the offset.
  expect_corrupt(runend_metadata(PType::u8, 2, 2), {primitive_node<uint8_t>({1, 4}), values}, 2);
  // Signed or float ends.
  expect_corrupt(runend_metadata(PType::i8, 2), {primitive_node<int8_t>({1, 2}), values}, 2);
  expect_corrupt(runend_metadata(PType::f32, 2), {primitive_node<float>({1, 2}), values}, 2);
  // num_runs disagreeing with the children.
  expect_corrupt(runend_metadata(PType::u8, 3), {primitive_node<uint8_t>({1, 2}), values}, 2);
  // A missing values child; an unknown ptype.
  expect_corrupt(runend_metadata(PType::u8, 2), {primitive_node<uint8_t>({1, 2})}, 2);
  pb::RunEndMetadata bad;
  bad.set_ends_ptype(42);
  bad.set_num_runs(2);
  expect_corrupt(bad.SerializeAsString(), {primitive_node<uint8_t>({1, 2}), values}, 2);
}
