// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>
#include <limits>
#include <optional>
#include <random>
#include <type_traits>

#include "format/proto/bitpacked.pb.h"
#include "format/proto/scalar.pb.h"
#include "tests/format/alp_golden.hpp"
#include "tests/format/bitpacked_fixtures.hpp"
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

// The reference added while unpacking (DecodeContext::decode_adding) against the plain way:
// the bitpacked child decoded alone, then the reference added to every value.
TEMPLATE_TEST_CASE("fastlanes.for over bitpacked adds the reference as it unpacks, as after it",
                   "[format][for]", int8_t, uint8_t, int16_t, uint16_t, int32_t, uint32_t, int64_t,
                   uint64_t) {
  using U = std::make_unsigned_t<TestType>;
  std::mt19937_64 rng(sizeof(TestType) * 7 + std::is_signed_v<TestType>);
  const unsigned width = GENERATE(0u, 1u, 3u, unsigned(sizeof(U) * 4 + 1),
                                  unsigned(sizeof(U) * 8 - 1), unsigned(sizeof(U) * 8));
  const unsigned offset = GENERATE(0u, 5u, 1023u);
  const size_t rows = GENERATE(1u, 1000u, 3001u);
  const bool nulls = GENERATE(false, true);
  const bool patched = GENERATE(false, true);
  INFO("width " << width << " offset " << offset << " rows " << rows << " nulls " << nulls
                << " patches " << patched);
  const uint64_t mask = width == 64 ? ~uint64_t{0} : (uint64_t{1} << width) - 1;
  std::vector<U> bits(rows);
  for (auto& v : bits) v = static_cast<U>(rng() & mask);
  ArrayView child = bitpacked_node(bits, width, offset);
  const auto t = DType::make_primitive(ptype_of<TestType>(), nulls);
  if (patched) {  // the first and last rows patched with values past the width
    const bool two = rows > 1;
    pb::BitPackedMetadata m;
    m.set_bit_width(width);
    m.set_offset(offset);
    m.mutable_patches()->set_len(two ? 2 : 1);
    m.mutable_patches()->set_indices_ptype(static_cast<uint32_t>(PType::u32));
    const auto meta = m.SerializeAsString();
    child.metadata.assign(meta.begin(), meta.end());
    child.children = {two ? primitive_node<uint32_t>({0, static_cast<uint32_t>(rows - 1)})
                          : primitive_node<uint32_t>({0}),
                      two ? primitive_node<U>({static_cast<U>(~U{0}), static_cast<U>(rng())})
                          : primitive_node<U>({static_cast<U>(~U{0})})};
  }
  if (nulls) {
    std::vector<bool> valid(rows);
    for (size_t i = 0; i < rows; ++i) valid[i] = rng() % 5 != 0;
    child.children.push_back(bool_node(valid));
  }
  // The reference as the writer stores it: a scalar of the array's own type.
  const auto reference = static_cast<TestType>(rng());
  auto n = node("fastlanes.for",
                std::is_signed_v<TestType> ? signed_reference(reference)
                                           : unsigned_reference(static_cast<uint64_t>(reference)),
                {}, {child});
  // Whole, a window that starts and ends inside blocks, and an empty one.
  const std::optional<format::RowWindow> windows[] = {std::nullopt,
                                                      format::RowWindow{rows / 3, rows - rows / 4},
                                                      format::RowWindow{rows / 2, rows / 2}};
  for (const auto& window : windows) {
    INFO("window " << (window ? window->begin : 0) << " " << (window ? window->end : rows));
    format::DecodeContext plain_ctx, fused_ctx;
    auto plain =
        window ? plain_ctx.decode_slice(child, t, rows, *window) : plain_ctx.decode(child, t, rows);
    auto fused =
        window ? fused_ctx.decode_slice(n, t, rows, *window) : fused_ctx.decode(n, t, rows);
    REQUIRE(plain.ok());
    REQUIRE(fused.ok());
    REQUIRE((*fused)->length == (*plain)->length);
    REQUIRE((*fused)->buffers[0].size() >= ((*fused)->offset + (*fused)->length) * sizeof(U));
    std::vector<TestType> want = values_of<TestType>(**plain);
    for (auto& v : want)
      v = static_cast<TestType>(static_cast<U>(static_cast<U>(v) + static_cast<U>(reference)));
    const std::vector<TestType> got = values_of<TestType>(**fused);
    const std::vector<bool> valid = validity_of(**plain);
    CHECK(validity_of(**fused) == valid);
    CHECK((*fused)->null_count == (*plain)->null_count);
    for (size_t i = 0; i < got.size(); ++i) {
      if (valid[i]) REQUIRE(got[i] == want[i]);
    }
  }
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
