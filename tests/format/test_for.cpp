// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>
#include <limits>

#include "format/proto/bitpacked.pb.h"
#include "format/proto/scalar.pb.h"
#include "tests/format/alp_golden.hpp"
#include "tests/format/fixtures.hpp"

using namespace oc;
using namespace oc::test;

namespace {

std::string signed_reference(int64_t v) {
  pb::ScalarValue s;
  s.set_int64_value(v);
  return s.SerializeAsString();
}

std::string unsigned_reference(uint64_t v) {
  pb::ScalarValue s;
  s.set_uint64_value(v);
  return s.SerializeAsString();
}

}  // namespace

TEST_CASE("fastlanes.for golden metadata is a bare i64::MAX scalar", "[format][for]") {
  // vortex encodings/fastlanes/goldenfiles/for.metadata
  const std::string golden("\x18\xfe\xff\xff\xff\xff\xff\xff\xff\xff\x01", 11);
  auto n = node("fastlanes.for", golden, {}, {primitive_node<int64_t>({0, 1, 2})});
  auto c = decode(n, DType::make_primitive(PType::i64, false), 3);
  REQUIRE(c.ok());
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  CHECK(values_of<int64_t>(**c) == std::vector<int64_t>{kMax, kMin, kMin + 1});  // wraps
}

TEST_CASE("fastlanes.for adds signed and unsigned references", "[format][for]") {
  auto n =
      node("fastlanes.for", signed_reference(-100), {}, {primitive_node<int16_t>({0, 5, 200})});
  auto c = decode(n, DType::make_primitive(PType::i16, false), 3);
  REQUIRE(c.ok());
  CHECK(values_of<int16_t>(**c) == std::vector<int16_t>{-100, -95, 100});

  n = node("fastlanes.for", unsigned_reference(250), {}, {primitive_node<uint8_t>({0, 5, 6})});
  c = decode(n, DType::make_primitive(PType::u8, false), 3);
  REQUIRE(c.ok());
  CHECK(values_of<uint8_t>(**c) == std::vector<uint8_t>{250, 255, 0});
}

TEST_CASE("fastlanes.for keeps the child's validity and offset", "[format][for]") {
  // A zero-width bitpacked child decodes to zeros that start at row 2 of its block.
  pb::BitPackedMetadata m;
  m.set_bit_width(0);
  m.set_offset(2);
  auto child = node("fastlanes.bitpacked", m.SerializeAsString(), {Buffer()},
                    {bool_node({true, false, true})});
  auto n = node("fastlanes.for", unsigned_reference(1000), {}, {child});
  auto c = decode(n, DType::make_primitive(PType::u32, true), 3);
  REQUIRE(c.ok());
  CHECK(values_of<uint32_t>(**c)[0] == 1000);
  CHECK(values_of<uint32_t>(**c)[2] == 1000);
  CHECK(validity_of(**c) == std::vector<bool>{true, false, true});
  CHECK((*c)->null_count == 1);
}

TEST_CASE("fastlanes.for rejects hostile input", "[format][for]") {
  const auto i32 = DType::make_primitive(PType::i32, false);
  auto child = primitive_node<int32_t>({1, 2});
  CHECK(decode(node("fastlanes.for", signed_reference(5), {}, {child}), i32, 2).ok());
  CHECK(decode(node("fastlanes.for", "", {}, {child}), i32, 2).error().code() ==
        Errc::corrupt);  // null
  CHECK(decode(node("fastlanes.for", signed_reference(int64_t{1} << 40), {}, {child}), i32, 2)
            .error()
            .code() == Errc::corrupt);  // reference does not fit
  CHECK(decode(node("fastlanes.for", signed_reference(5), {}, {}), i32, 2).error().code() ==
        Errc::corrupt);
  CHECK(decode(node("fastlanes.for", signed_reference(5), {}, {child}),
               DType::make_primitive(PType::f32, false), 2)
            .error()
            .code() == Errc::corrupt);
}

TEST_CASE("fastlanes.for golden segments decode like the reference writer",
          "[format][for][golden]") {
  for (const char* name : {"for_i32", "for_i64_negative", "for_i8", "for_bitpacked_sliced"}) {
    alp_golden::check(name);
  }
}
