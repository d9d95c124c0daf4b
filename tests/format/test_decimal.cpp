// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>

#include "format/encodings/decimal.hpp"
#include "format/proto/decimal.pb.h"
#include "tests/format/nested_golden.hpp"

using namespace oc;
using namespace oc::test;
using namespace oc::test::nested_golden;

namespace {

std::string decimal_meta(int32_t values_type) {
  pb::DecimalMetadata m;
  m.set_values_type(values_type);
  return m.SerializeAsString();
}

}  // namespace

TEST_CASE("vortex.decimal golden segments decode like the oracle", "[format][decimal]") {
  check_golden("decimal_4_1", make_decimal(4, 1, true));      // i16 storage
  check_golden("decimal_10_2", make_decimal(10, 2, true));    // i64 storage
  check_golden("decimal_38_10", make_decimal(38, 10, true));  // i128, shared as is
  check_golden("decimal_50_10", make_decimal(50, 10, true));  // i256, shared as is
}

TEST_CASE("vortex.decimal metadata matches upstream's protobuf bytes", "[format][decimal]") {
  const std::vector<uint8_t> i64_values = {0x08, 0x03};  // what 0.93 writes for decimal(10,2)
  auto m = format::parse_metadata<pb::DecimalMetadata>(i64_values, "vortex.decimal");
  REQUIRE(m.ok());
  CHECK(m->values_type() == 3);
}

TEST_CASE("resize_decimal_values sign-extends and narrows", "[format][decimal]") {
  const std::vector<int8_t> small = {-1, 5, -128};
  auto wide = format::encodings::resize_decimal_values(
      reinterpret_cast<const uint8_t*>(small.data()), 1, 3, 16);
  REQUIRE(wide.ok());
  const auto* v = wide->as<Int128>();
  CHECK(v[0] == -1);
  CHECK(v[1] == 5);
  CHECK(v[2] == -128);

  // i256 -> i128: fits when the dropped half repeats the sign bit of the kept half.
  std::vector<uint8_t> big(64, 0);
  std::fill(big.begin(), big.begin() + 32, 0xff);  // -1
  big[32] = 7;                                     // 7
  auto narrow = format::encodings::resize_decimal_values(big.data(), 32, 2, 16);
  REQUIRE(narrow.ok());
  CHECK(narrow->as<Int128>()[0] == -1);
  CHECK(narrow->as<Int128>()[1] == 7);
  big[63] = 1;  // 2^248 + 7 does not fit in 128 bits
  CHECK(format::encodings::resize_decimal_values(big.data(), 32, 2, 16).error().code() ==
        Errc::corrupt);
}

TEST_CASE("vortex.decimal widens every storage width", "[format][decimal]") {
  auto n = node("vortex.decimal", decimal_meta(2), {buffer_of<int32_t>({-2, 0, 123456789})},
                {bool_node({true, false, true})});
  auto c = decode(n, make_decimal(9, 3, true), 3);
  REQUIRE(c.ok());
  CHECK((*c)->null_count == 1);
  const auto* v = (*c)->values<Int128>();
  CHECK(v[0] == -2);
  CHECK(v[2] == 123456789);

  n = node("vortex.decimal", decimal_meta(3), {buffer_of<int64_t>({-3, INT64_MAX})});
  c = decode(n, make_decimal(60, 0, false), 2);
  REQUIRE(c.ok());
  CHECK(render_rows(**c) ==
        std::vector<std::string>{std::string("fd") + std::string(62, 'f'),
                                 std::string("ffffffffffffff7f") + std::string(48, '0')});
}

TEST_CASE("vortex.decimal handles zero rows", "[format][decimal]") {
  auto c =
      decode(node("vortex.decimal", decimal_meta(4), {Buffer()}), make_decimal(20, 2, false), 0);
  REQUIRE(c.ok());
  CHECK((*c)->length == 0);
}

TEST_CASE("vortex.decimal rejects malformed input", "[format][decimal]") {
  const auto t = make_decimal(10, 2, false);
  CHECK(decode(node("vortex.decimal", decimal_meta(6), {buffer_of<int64_t>({1})}), t, 1)
            .error()
            .code() == Errc::corrupt);
  CHECK(decode(node("vortex.decimal", decimal_meta(-1), {buffer_of<int64_t>({1})}), t, 1)
            .error()
            .code() == Errc::corrupt);
  CHECK(decode(node("vortex.decimal", decimal_meta(3), {buffer_of<int64_t>({1})}), t, 2)
            .error()
            .code() == Errc::corrupt);
  CHECK(decode(node("vortex.decimal", decimal_meta(3)), t, 0).error().code() == Errc::corrupt);
  CHECK(decode(node("vortex.decimal", decimal_meta(3), {buffer_of<int64_t>({1})}),
               DType::make_primitive(PType::i64, false), 1)
            .error()
            .code() == Errc::corrupt);
}
