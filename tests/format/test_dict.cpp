// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>

#include "format/proto/dict.pb.h"
#include "tests/format/fixtures.hpp"
#include "tests/format/strings_golden.hpp"

using namespace oc;
using namespace oc::test;

namespace {

std::string dict_meta(uint32_t values_len, PType codes, std::optional<bool> nullable_codes = {}) {
  pb::DictMetadata m;
  m.set_values_len(values_len);
  m.set_codes_ptype(static_cast<uint32_t>(codes));
  if (nullable_codes) m.set_is_nullable_codes(*nullable_codes);
  return m.SerializeAsString();
}

ArrayView varbin_node(const std::vector<std::string>& values) {
  std::string bytes;
  std::vector<int32_t> offsets = {0};
  for (const auto& v : values) {
    bytes += v;
    offsets.push_back(static_cast<int32_t>(bytes.size()));
  }
  return node("vortex.varbin", "\x08\x06", {bytes_of(bytes)}, {primitive_node(offsets)});
}

}  // namespace

TEST_CASE("vortex.dict golden segments decode like the oracle", "[format][dict]") {
  strings_golden::check("dict_utf8", DType::make_utf8(true));  // nulls in the values
  strings_golden::check("dict_fsst_values", DType::make_utf8(true));
  strings_golden::check("dict_i64_nullable_codes", DType::make_primitive(PType::i64, true));
  strings_golden::check("dict_f64", DType::make_primitive(PType::f64, false));
}

TEST_CASE("vortex.dict metadata matches the upstream golden bytes", "[format][dict]") {
  // vortex-array/goldenfiles/dict.metadata in vortex-data/vortex.
  const std::string golden = "\x08\xff\xff\xff\xff\x0f\x10\x03";
  auto m = format::parse_metadata<pb::DictMetadata>(
      {reinterpret_cast<const uint8_t*>(golden.data()), golden.size()}, "dict");
  REQUIRE(m.ok());
  CHECK(m->values_len() == 0xffffffffu);
  CHECK(m->codes_ptype() == static_cast<uint32_t>(PType::u64));
  CHECK_FALSE(m->has_is_nullable_codes());
  CHECK_FALSE(m->has_all_values_referenced());
}

TEST_CASE("vortex.dict gathers strings, numbers and bools", "[format][dict]") {
  auto strings =
      node("vortex.dict", dict_meta(3, PType::u16), {},
           {primitive_node<uint16_t>({2, 0, 0, 1}), varbin_node({"zero", "one", "two"})});
  auto c = decode(strings, DType::make_utf8(false), 4);
  REQUIRE(c.ok());
  CHECK(strings_of(**c) == std::vector<std::string>{"two", "zero", "zero", "one"});

  auto numbers = node("vortex.dict", dict_meta(2, PType::i8), {},
                      {primitive_node<int8_t>({1, 1, 0}), primitive_node<int32_t>({-5, 70000})});
  c = decode(numbers, DType::make_primitive(PType::i32, false), 3);
  REQUIRE(c.ok());
  CHECK(values_of<int32_t>(**c) == std::vector<int32_t>{70000, 70000, -5});

  auto bools = node("vortex.dict", dict_meta(2, PType::u8), {},
                    {primitive_node<uint8_t>({0, 1, 1}), bool_node({true, false})});
  c = decode(bools, DType::make_bool(false), 3);
  REQUIRE(c.ok());
  CHECK(bools_of(**c) == std::vector<bool>{true, false, false});
}

TEST_CASE("vortex.dict turns null codes into null rows", "[format][dict]") {
  // Null codes may hold any value, even one out of range.
  auto codes = primitive_node<uint8_t>({0, 200, 1});
  codes.children.push_back(bool_node({true, false, true}));
  auto n = node("vortex.dict", dict_meta(2, PType::u8, true), {},
                {codes, primitive_node<int64_t>({10, 20})});
  auto c = decode(n, DType::make_primitive(PType::i64, true), 3);
  REQUIRE(c.ok());
  CHECK(validity_of(**c) == std::vector<bool>{true, false, true});
  CHECK((*c)->null_count == 1);
  CHECK(values_of<int64_t>(**c)[2] == 20);

  // Without is_nullable_codes (older files) the codes take the dtype's nullability.
  n.metadata.clear();
  const std::string legacy = dict_meta(2, PType::u8);
  n.metadata.assign(legacy.begin(), legacy.end());
  c = decode(n, DType::make_primitive(PType::i64, true), 3);
  REQUIRE(c.ok());
  CHECK((*c)->null_count == 1);

  // An empty dictionary is fine when no code is valid.
  auto all_null = primitive_node<uint8_t>({9, 9});
  all_null.children.push_back(bool_node({false, false}));
  auto empty_dict =
      node("vortex.dict", dict_meta(0, PType::u8, true), {}, {all_null, varbin_node({})});
  c = decode(empty_dict, DType::make_utf8(true), 2);
  REQUIRE(c.ok());
  CHECK((*c)->null_count == 2);
}

TEST_CASE("vortex.dict rejects bad codes and shapes", "[format][dict]") {
  const auto t = DType::make_primitive(PType::i64, false);
  const auto values = primitive_node<int64_t>({1, 2});
  auto out_of_range =
      node("vortex.dict", dict_meta(2, PType::u8), {}, {primitive_node<uint8_t>({0, 2}), values});
  CHECK(decode(out_of_range, t, 2).error().code() == Errc::corrupt);
  auto negative =
      node("vortex.dict", dict_meta(2, PType::i32), {}, {primitive_node<int32_t>({0, -1}), values});
  CHECK(decode(negative, t, 2).error().code() == Errc::corrupt);
  auto float_codes =
      node("vortex.dict", dict_meta(2, PType::f32), {}, {primitive_node<float>({0, 1}), values});
  CHECK(decode(float_codes, t, 2).error().code() == Errc::corrupt);
  auto nullable_codes = node("vortex.dict", dict_meta(2, PType::u8, true), {},
                             {primitive_node<uint8_t>({0, 1}), values});
  CHECK(decode(nullable_codes, t, 2).error().code() == Errc::corrupt);
  auto wrong_values_len =
      node("vortex.dict", dict_meta(3, PType::u8), {}, {primitive_node<uint8_t>({0, 1}), values});
  CHECK(decode(wrong_values_len, t, 2).error().code() == Errc::corrupt);
  auto one_child = node("vortex.dict", dict_meta(2, PType::u8), {}, {values});
  CHECK(decode(one_child, t, 2).error().code() == Errc::corrupt);
}

TEST_CASE("vortex.dict gathers views of one large value; offsets Arrow cannot hold are refused",
          "[format][dict]") {
  // 2100 codes of one 1 MiB value: 2.1 GiB of strings, which views hold as 2100 views of one
  // buffer, and i32 offsets cannot hold at all (refused before allocating).
  auto n = node(
      "vortex.dict", dict_meta(1, PType::u8), {},
      {primitive_node(std::vector<uint8_t>(2100, 0)), varbin_node({std::string(1 << 20, 'v')})});
  auto c = decode(n, DType::make_binary(false), 2100);
  REQUIRE(c.ok());
  CHECK((*c)->string_views);
  CHECK(format::view_data(**c).size() == 1);
  CHECK(format::string_at(**c, 2099) == std::string(1 << 20, 'v'));
  auto offsets = format::with_string_layout(*c, format::StringLayout::offsets);
  REQUIRE_FALSE(offsets.ok());
  CHECK(offsets.error().code() == Errc::unsupported);
}
