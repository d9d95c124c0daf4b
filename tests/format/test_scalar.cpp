// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>

#include "format/proto/scalar.pb.h"
#include "format/scalar.hpp"
#include "tests/format/fixtures.hpp"

using namespace oc;
using namespace oc::test;

namespace {
std::vector<uint8_t> bytes(const pb::ScalarValue& v) {
  auto s = v.SerializeAsString();
  return {s.begin(), s.end()};
}
}  // namespace

TEST_CASE("scalar values decode from golden protobuf bytes", "[format][scalar]") {
  // Field 3 (sint64), zigzag(-2) = 3: tag 0x18, value 0x03.
  auto s = format::parse_scalar(std::vector<uint8_t>{0x18, 0x03});
  REQUIRE(s.ok());
  CHECK(std::get<int64_t>(s->value) == -2);
  // Field 4 (uint64) 300: tag 0x20, varint 0xac 0x02.
  s = format::parse_scalar(std::vector<uint8_t>{0x20, 0xac, 0x02});
  CHECK(std::get<uint64_t>(s->value) == 300);
  // Field 1 (null_value) 0.
  s = format::parse_scalar(std::vector<uint8_t>{0x08, 0x00});
  CHECK(s->is_null());
  // Field 7 string "hi".
  s = format::parse_scalar(std::vector<uint8_t>{0x3a, 0x02, 'h', 'i'});
  CHECK(std::get<std::string>(s->value) == "hi");
  CHECK_FALSE(format::parse_scalar(std::vector<uint8_t>{0x3a, 0x09, 'h'}).ok());
}

TEST_CASE("scalar_to_bits range-checks against the ptype", "[format][scalar]") {
  format::Scalar s{int64_t{-1}};
  CHECK(*format::scalar_to_bits(s, PType::i8) == 0xff);
  CHECK_FALSE(format::scalar_to_bits(s, PType::u32).ok());
  format::Scalar big{uint64_t{300}};
  CHECK_FALSE(format::scalar_to_bits(big, PType::u8).ok());
  CHECK(*format::scalar_to_bits(big, PType::u16) == 300);
}

TEST_CASE("vortex.constant expands a scalar", "[format][scalar]") {
  pb::ScalarValue v;
  v.set_string_value("abc");
  auto b = bytes(v);
  auto n = node("vortex.constant", {}, {Buffer::copy_of(b)});
  auto c = decode(n, DType::make_utf8(false), 3);
  REQUIRE(c.ok());
  CHECK(strings_of(**c) == std::vector<std::string>{"abc", "abc", "abc"});

  pb::ScalarValue null;
  null.set_null_value(pb::NULL_VALUE);
  auto nb = bytes(null);
  n = node("vortex.constant", {}, {Buffer::copy_of(nb)});
  c = decode(n, DType::make_primitive(PType::f64, true), 4);
  REQUIRE(c.ok());
  CHECK((*c)->null_count == 4);
  CHECK_FALSE(decode(n, DType::make_primitive(PType::f64, false), 4).ok());
}
