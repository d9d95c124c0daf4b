// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>

#include "tests/format/nested_golden.hpp"

using namespace oc;
using namespace oc::test;
using namespace oc::test::nested_golden;

// The Python writer has no way to build byte-bools (it converts them to vortex.bool), so these
// tests are hand-built from the layout in encodings/bytebool.

TEST_CASE("vortex.bytebool treats any non-zero byte as true", "[format][bytebool]") {
  auto n = node("vortex.bytebool", {}, {buffer_of<uint8_t>({0, 1, 2, 0xff, 0, 0, 0, 0, 1})});
  auto c = decode(n, DType::make_bool(false), 9);
  REQUIRE(c.ok());
  CHECK(bools_of(**c) ==
        std::vector<bool>{false, true, true, true, false, false, false, false, true});
}

TEST_CASE("vortex.bytebool keeps its validity", "[format][bytebool]") {
  auto n = node("vortex.bytebool", {}, {buffer_of<uint8_t>({1, 0, 1})},
                {bool_node({true, false, true})});
  auto c = decode(n, DType::make_bool(true), 3);
  REQUIRE(c.ok());
  CHECK((*c)->null_count == 1);
  CHECK(render_rows(**c) == std::vector<std::string>{"true", "null", "true"});
  CHECK(decode(node("vortex.bytebool", {}, {Buffer()}), DType::make_bool(true), 0).ok());
}

TEST_CASE("vortex.bytebool rejects malformed input", "[format][bytebool]") {
  CHECK(
      decode(node("vortex.bytebool", {}, {buffer_of<uint8_t>({1, 0})}), DType::make_bool(false), 3)
          .error()
          .code() == Errc::corrupt);
  CHECK(decode(node("vortex.bytebool"), DType::make_bool(false), 0).error().code() ==
        Errc::corrupt);
  CHECK(decode(node("vortex.bytebool", {}, {buffer_of<uint8_t>({1})}),
               DType::make_primitive(PType::u8, false), 1)
            .error()
            .code() == Errc::corrupt);
}

TEST_CASE("vortex.bytebool ignores upstream's legacy golden metadata", "[format][bytebool]") {
  // encodings/bytebool/goldenfiles/bytebool.metadata: a FlexBuffers map {validity: AllValid}
  // from before validity became a child. The current encoding carries no metadata; its buffer
  // and children say everything, so the legacy bytes are not needed to decode.
  const std::vector<uint8_t> legacy = {0x76, 0x61, 0x6c, 0x69, 0x64, 0x69, 0x74, 0x79, 0x00, 0x08,
                                       0x41, 0x6c, 0x6c, 0x56, 0x61, 0x6c, 0x69, 0x64, 0x00, 0x01,
                                       0x14, 0x01, 0x01, 0x01, 0x0e, 0x14, 0x02, 0x24, 0x01};
  auto n = node("vortex.bytebool", {}, {buffer_of<uint8_t>({0, 1})});
  n.metadata = legacy;
  auto c = decode(n, DType::make_bool(false), 2);
  REQUIRE(c.ok());
  CHECK(bools_of(**c) == std::vector<bool>{false, true});
}
