// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>

#include "format/proto/canonical.pb.h"
#include "tests/format/fixtures.hpp"

using namespace oc;
using namespace oc::test;

TEST_CASE("vortex.primitive decodes values and validity", "[format][canonical]") {
  auto n = primitive_node<int32_t>({1, -2, 3, 4});
  auto c = decode(n, DType::make_primitive(PType::i32, false), 4);
  REQUIRE(c.ok());
  CHECK(values_of<int32_t>(**c) == std::vector<int32_t>{1, -2, 3, 4});
  CHECK((*c)->null_count == 0);

  n.children.push_back(bool_node({true, false, true, false}));
  c = decode(n, DType::make_primitive(PType::i32, true), 4);
  REQUIRE(c.ok());
  CHECK(validity_of(**c) == std::vector<bool>{true, false, true, false});
  CHECK((*c)->null_count == 2);
}

TEST_CASE("vortex.primitive rejects a buffer of the wrong size", "[format][canonical]") {
  auto n = primitive_node<int32_t>({1, 2, 3});
  auto c = decode(n, DType::make_primitive(PType::i32, false), 4);
  REQUIRE_FALSE(c.ok());
  CHECK(c.error().code() == Errc::corrupt);
}

TEST_CASE("vortex.bool honours its bit offset", "[format][canonical]") {
  pb::BoolMetadata m;
  m.set_offset(3);
  // bits: 0b1010'1000 -> from bit 3: 1,0,1,0,1
  auto n = node("vortex.bool", m.SerializeAsString(), {buffer_of<uint8_t>({0xA8})});
  auto c = decode(n, DType::make_bool(false), 5);
  REQUIRE(c.ok());
  CHECK(bools_of(**c) == std::vector<bool>{true, false, true, false, true});
  m.set_offset(9);
  n.metadata.clear();
  auto s = m.SerializeAsString();
  n.metadata.assign(s.begin(), s.end());
  CHECK(decode(n, DType::make_bool(false), 1).error().code() == Errc::corrupt);
}

TEST_CASE("vortex.struct decodes fields after an optional validity child", "[format][canonical]") {
  auto t = DType::make_struct(
      {"a", "b"}, {DType::make_primitive(PType::u8, false), DType::make_bool(false)}, true);
  auto n = node("vortex.struct", {}, {},
                {bool_node({true, false, true}), primitive_node<uint8_t>({7, 8, 9}),
                 bool_node({false, false, true})});
  auto c = decode(n, t, 3);
  REQUIRE(c.ok());
  CHECK((*c)->null_count == 1);
  CHECK(values_of<uint8_t>(*(*c)->children[0]) == std::vector<uint8_t>{7, 8, 9});
  CHECK(bools_of(*(*c)->children[1]) == std::vector<bool>{false, false, true});
}

TEST_CASE("unknown encodings fail with their name", "[format][canonical]") {
  auto c = decode(node("vortex.future"), DType::make_primitive(PType::f64, false), 3);
  REQUIRE_FALSE(c.ok());
  CHECK(c.error().code() == Errc::unsupported);
  CHECK(c.error().to_string().find("unsupported encoding vortex.future") != std::string::npos);
}

TEST_CASE("vortex.null and vortex.masked produce nulls", "[format][canonical]") {
  auto c = decode(node("vortex.null"), DType::make_null(), 5);
  REQUIRE(c.ok());
  CHECK((*c)->null_count == 5);
  auto m = node("vortex.masked", {}, {},
                {primitive_node<int64_t>({5, 6, 7}), bool_node({true, false, false})});
  c = decode(m, DType::make_primitive(PType::i64, true), 3);
  REQUIRE(c.ok());
  CHECK(values_of<int64_t>(**c)[0] == 5);
  CHECK(validity_of(**c) == std::vector<bool>{true, false, false});
}

TEST_CASE("vortex.masked of a non-nullable dtype is corrupt, as vortex-data refuses it",
          "[format][canonical]") {
  // vortex-data: "MaskedArray must have nullable validity", with or without a validity child.
  const auto i64 = DType::make_primitive(PType::i64, false);
  auto r = decode(node("vortex.masked", {}, {}, {primitive_node<int64_t>({5, 6, 7})}), i64, 3);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code() == Errc::corrupt);
  CHECK(r.error().to_string().find("non-nullable") != std::string::npos);
  r = decode(node("vortex.masked", {}, {},
                  {primitive_node<int64_t>({5, 6, 7}), bool_node({true, false, true})}),
             i64, 3);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code() == Errc::corrupt);
  // Three children, or a buffer, are corrupt whatever the dtype.
  const auto nullable = DType::make_primitive(PType::i64, true);
  CHECK(decode(node("vortex.masked", {}, {},
                    {primitive_node<int64_t>({5}), bool_node({true}), bool_node({true})}),
               nullable, 1)
            .error()
            .code() == Errc::corrupt);
  CHECK(decode(node("vortex.masked", {}, {buffer_of<uint8_t>({0})}, {primitive_node<int64_t>({5})}),
               nullable, 1)
            .error()
            .code() == Errc::corrupt);
  // The nullable form without a validity child is all valid.
  auto ok = decode(node("vortex.masked", {}, {}, {primitive_node<int64_t>({5, 6})}), nullable, 2);
  REQUIRE(ok.ok());
  CHECK((*ok)->null_count == 0);
}
