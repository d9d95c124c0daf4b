// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>

#include "format/proto/varbin.pb.h"
#include "tests/format/fixtures.hpp"
#include "tests/format/strings_golden.hpp"

using namespace oc;
using namespace oc::test;

namespace {

std::string varbin_meta(PType offsets) {
  pb::VarBinMetadata m;
  m.set_offsets_ptype(static_cast<uint32_t>(offsets));
  return m.SerializeAsString();
}

}  // namespace

TEST_CASE("vortex.varbin golden segments decode like the oracle", "[format][varbin]") {
  strings_golden::check("varbin_utf8", DType::make_utf8(true));
  // A slice: offsets start past 0 and the validity bitmap has a bit offset.
  strings_golden::check("varbin_sliced_i64", DType::make_binary(true));
}

TEST_CASE("vortex.varbin accepts any integer offset type", "[format][varbin]") {
  const std::string bytes = "xxhelloworld";
  auto u8 = node("vortex.varbin", varbin_meta(PType::u8), {bytes_of(bytes)},
                 {primitive_node<uint8_t>({2, 7, 7, 12})});
  auto c = decode(u8, DType::make_utf8(false), 3);
  REQUIRE(c.ok());
  CHECK(strings_of(**c) == std::vector<std::string>{"hello", "", "world"});
  CHECK((*c)->offsets()[0] == 0);

  auto u64 = node("vortex.varbin", varbin_meta(PType::u64), {bytes_of(bytes)},
                  {primitive_node<uint64_t>({0, 2})});
  c = decode(u64, DType::make_binary(false), 1);
  REQUIRE(c.ok());
  CHECK(strings_of(**c) == std::vector<std::string>{"xx"});

  auto empty =
      node("vortex.varbin", varbin_meta(PType::i32), {Buffer()}, {primitive_node<int32_t>({0})});
  c = decode(empty, DType::make_utf8(false), 0);
  REQUIRE(c.ok());
  CHECK((*c)->length == 0);
}

TEST_CASE("vortex.varbin rejects bad offsets", "[format][varbin]") {
  const auto t = DType::make_utf8(false);
  const Buffer bytes = bytes_of("abcdef");
  auto decreasing =
      node("vortex.varbin", varbin_meta(PType::i32), {bytes}, {primitive_node<int32_t>({0, 4, 3})});
  CHECK(decode(decreasing, t, 2).error().code() == Errc::corrupt);
  auto past_end =
      node("vortex.varbin", varbin_meta(PType::i32), {bytes}, {primitive_node<int32_t>({0, 7})});
  CHECK(decode(past_end, t, 1).error().code() == Errc::corrupt);
  auto negative =
      node("vortex.varbin", varbin_meta(PType::i16), {bytes}, {primitive_node<int16_t>({-1, 2})});
  CHECK(decode(negative, t, 1).error().code() == Errc::corrupt);
  auto float_offsets =
      node("vortex.varbin", varbin_meta(PType::f32), {bytes}, {primitive_node<float>({0, 2})});
  CHECK(decode(float_offsets, t, 1).error().code() == Errc::corrupt);
  auto too_few =
      node("vortex.varbin", varbin_meta(PType::i32), {bytes}, {primitive_node<int32_t>({0, 2})});
  CHECK(decode(too_few, t, 2).error().code() == Errc::corrupt);
  auto bad_ptype = node("vortex.varbin", "\x08\x0b", {bytes}, {primitive_node<int32_t>({0})});
  CHECK(decode(bad_ptype, t, 0).error().code() == Errc::corrupt);
}

TEST_CASE("vortex.varbin carries validity", "[format][varbin]") {
  auto n = node("vortex.varbin", varbin_meta(PType::u32), {bytes_of("abc")},
                {primitive_node<uint32_t>({0, 1, 2, 3}), bool_node({true, false, true})});
  auto c = decode(n, DType::make_utf8(true), 3);
  REQUIRE(c.ok());
  CHECK(validity_of(**c) == std::vector<bool>{true, false, true});
  CHECK((*c)->null_count == 1);
  CHECK(strings_of(**c)[2] == "c");
}
