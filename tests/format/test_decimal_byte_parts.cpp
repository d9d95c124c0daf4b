// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>

#include "format/proto/decimal_byte_parts.pb.h"
#include "tests/format/nested_golden.hpp"

using namespace oc;
using namespace oc::test;
using namespace oc::test::nested_golden;

namespace {

std::string parts_meta(PType msp, uint32_t lower_parts = 0) {
  pb::DecimalBytePartsMetadata m;
  m.set_zeroth_child_ptype(static_cast<int32_t>(msp));
  m.set_lower_part_count(lower_parts);
  return m.SerializeAsString();
}

}  // namespace

TEST_CASE("vortex.decimal_byte_parts golden segment decodes like the oracle",
          "[format][decimal_byte_parts]") {
  check_golden("decimal_byte_parts", make_decimal(12, 3, true));
}

TEST_CASE("vortex.decimal_byte_parts metadata matches upstream's protobuf bytes",
          "[format][decimal_byte_parts]") {
  const std::vector<uint8_t> i16_part = {0x08, 0x05};  // what 0.93 writes for decimal(10,2)
  auto m = format::parse_metadata<pb::DecimalBytePartsMetadata>(i16_part, "decimal_byte_parts");
  REQUIRE(m.ok());
  CHECK(m->zeroth_child_ptype() == static_cast<int32_t>(PType::i16));
  CHECK(m->lower_part_count() == 0);
}

TEST_CASE("vortex.decimal_byte_parts sign-extends its part and keeps its validity",
          "[format][decimal_byte_parts]") {
  auto msp = primitive_node<int16_t>({-350, 125, 0});
  msp.children.push_back(bool_node({true, true, false}));
  auto c = decode(node("vortex.decimal_byte_parts", parts_meta(PType::i16), {}, {msp}),
                  make_decimal(10, 2, true), 3);
  REQUIRE(c.ok());
  CHECK((*c)->null_count == 1);
  CHECK(validity_of(**c) == std::vector<bool>{true, true, false});
  CHECK((*c)->values<Int128>()[0] == -350);
  CHECK((*c)->values<Int128>()[1] == 125);

  c = decode(
      node("vortex.decimal_byte_parts", parts_meta(PType::i8), {}, {primitive_node<int8_t>({-1})}),
      make_decimal(40, 0, false), 1);
  REQUIRE(c.ok());
  CHECK(render_rows(**c) == std::vector<std::string>{std::string(64, 'f')});
}

TEST_CASE("vortex.decimal_byte_parts rejects what it cannot read", "[format][decimal_byte_parts]") {
  const auto t = make_decimal(10, 2, false);
  auto msp = primitive_node<int16_t>({1});
  auto lower = decode(node("vortex.decimal_byte_parts", parts_meta(PType::i16, 1), {},
                           {msp, primitive_node<uint64_t>({1})}),
                      t, 1);
  CHECK(lower.error().code() == Errc::unsupported);
  CHECK(lower.error().to_string().find("lower parts") != std::string::npos);
  CHECK(decode(node("vortex.decimal_byte_parts", parts_meta(PType::u16), {},
                    {primitive_node<uint16_t>({1})}),
               t, 1)
            .error()
            .code() == Errc::corrupt);
  CHECK(decode(node("vortex.decimal_byte_parts", parts_meta(PType::f32), {},
                    {primitive_node<float>({1})}),
               t, 1)
            .error()
            .code() == Errc::corrupt);
  CHECK(decode(node("vortex.decimal_byte_parts", parts_meta(PType::i16)), t, 1).error().code() ==
        Errc::corrupt);
}
