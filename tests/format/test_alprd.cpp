// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "format/proto/alprd.pb.h"
#include "tests/format/alp_golden.hpp"
#include "tests/format/fixtures.hpp"

using namespace oc;
using namespace oc::test;

namespace {

std::string alprd_metadata(uint32_t right_bit_width, std::vector<uint32_t> dict,
                           uint64_t patches = 0, PType left = PType::u16) {
  pb::ALPRDMetadata m;
  m.set_right_bit_width(right_bit_width);
  m.set_dict_len(static_cast<uint32_t>(dict.size()));
  for (uint32_t d : dict) m.add_dict(d);
  m.set_left_parts_ptype(static_cast<uint32_t>(left));
  if (patches != 0) {
    m.mutable_patches()->set_len(patches);
    m.mutable_patches()->set_indices_ptype(static_cast<uint32_t>(PType::u8));
  }
  return m.SerializeAsString();
}

// Left 16 bits of 1.0, 2.0 and 3.0 as f64 (right bits all zero for these values).
constexpr uint32_t kOne = 0x3FF0, kTwo = 0x4000, kThree = 0x4008;

}  // namespace

TEST_CASE("vortex.alprd metadata parses the upstream golden bytes", "[format][alprd]") {
  // encodings/alp/goldenfiles/alprd.metadata: right_bit_width = u32::MAX, dict_len = 8 with no
  // dictionary entries, left_parts_ptype = u64, patches { len = offset = u64::MAX, u64 indices }.
  const std::vector<uint8_t> golden = {0x08, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x10, 0x08, 0x20,
                                       0x03, 0x2a, 0x18, 0x08, 0xff, 0xff, 0xff, 0xff, 0xff,
                                       0xff, 0xff, 0xff, 0xff, 0x01, 0x10, 0xff, 0xff, 0xff,
                                       0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0x18, 0x03};
  auto m = format::parse_metadata<pb::ALPRDMetadata>(golden, "vortex.alprd");
  REQUIRE(m.ok());
  CHECK(m->right_bit_width() == std::numeric_limits<uint32_t>::max());
  CHECK(m->dict_len() == 8);
  CHECK(m->dict_size() == 0);
  CHECK(m->left_parts_ptype() == static_cast<uint32_t>(PType::u64));
  REQUIRE(m->has_patches());
  CHECK(m->patches().len() == std::numeric_limits<uint64_t>::max());
  CHECK(m->patches().offset() == std::numeric_limits<uint64_t>::max());
  const std::string again = m->SerializeAsString();
  CHECK(std::vector<uint8_t>(again.begin(), again.end()) == golden);

  auto n = node("vortex.alprd", std::string(golden.begin(), golden.end()), {},
                {primitive_node<uint16_t>({0}), primitive_node<uint64_t>({0})});
  auto c = decode(n, DType::make_primitive(PType::f64, false), 1);
  REQUIRE_FALSE(c.ok());
  CHECK(c.error().code() == Errc::corrupt);
}

TEST_CASE("vortex.alprd golden segments", "[format][alprd]") {
  // Needs fastlanes.bitpacked for both parts; both cases carry left-part patches.
  auto c = alp_golden::check("alprd_f64");
  CHECK(c->null_count > 0);
  alp_golden::check("alprd_f32");
}

TEST_CASE("vortex.alprd joins dictionary left parts, patches and right bits", "[format][alprd]") {
  // Rows: 1.0, 2.0, the next double after 1.0, and 3.0 (a left part missing from the dictionary,
  // so a patch; its code is a placeholder).
  auto n = node("vortex.alprd", alprd_metadata(48, {kOne, kTwo}, 1), {},
                {primitive_node<uint16_t>({0, 1, 0, 0}), primitive_node<uint64_t>({0, 0, 1, 0}),
                 primitive_node<uint8_t>({3}), primitive_node<uint16_t>({kThree})});
  auto c = decode(n, DType::make_primitive(PType::f64, false), 4);
  REQUIRE(c.ok());
  CHECK(values_of<double>(**c) == std::vector<double>{1.0, 2.0, std::nextafter(1.0, 2.0), 3.0});

  // f32: 16 right bits; 1.0f = 0x3F80'0000, 1.5f = 0x3FC0'0000.
  n = node("vortex.alprd", alprd_metadata(16, {0x3F80, 0x3FC0}), {},
           {primitive_node<uint16_t>({1, 0}), primitive_node<uint32_t>({0, 0})});
  c = decode(n, DType::make_primitive(PType::f32, false), 2);
  REQUIRE(c.ok());
  CHECK(values_of<float>(**c) == std::vector<float>{1.5f, 1.0f});
}

TEST_CASE("vortex.alprd takes validity from its left parts", "[format][alprd]") {
  auto left = primitive_node<uint16_t>({1, 7, 0});  // code 7 lies outside, on a null row
  left.children.push_back(bool_node({true, false, true}));
  auto n = node("vortex.alprd", alprd_metadata(48, {kOne, kTwo}), {},
                {left, primitive_node<uint64_t>({0, 0, 0})});
  auto c = decode(n, DType::make_primitive(PType::f64, true), 3);
  REQUIRE(c.ok());
  CHECK(validity_of(**c) == std::vector<bool>{true, false, true});
  CHECK(values_of<double>(**c)[0] == 2.0);
  CHECK(values_of<double>(**c)[2] == 1.0);

  // The same code on a valid row is corrupt.
  n.children[0] = primitive_node<uint16_t>({1, 7, 0});
  c = decode(n, DType::make_primitive(PType::f64, false), 3);
  REQUIRE_FALSE(c.ok());
  CHECK(c.error().code() == Errc::corrupt);
}

TEST_CASE("vortex.alprd decodes an empty array", "[format][alprd]") {
  auto n = node("vortex.alprd", alprd_metadata(48, {}), {},
                {primitive_node<uint16_t>({}), primitive_node<uint64_t>({})});
  auto c = decode(n, DType::make_primitive(PType::f64, false), 0);
  REQUIRE(c.ok());
  CHECK((*c)->length == 0);
}

TEST_CASE("vortex.alprd rejects malformed nodes", "[format][alprd]") {
  const auto f64 = DType::make_primitive(PType::f64, false);
  const std::vector<ArrayView> parts = {primitive_node<uint16_t>({0}),
                                        primitive_node<uint64_t>({0})};
  auto expect_error = [&](const std::string& meta, std::vector<ArrayView> children,
                          const DTypePtr& t, Errc code) {
    auto c = decode(node("vortex.alprd", meta, {}, std::move(children)), t, 1);
    REQUIRE_FALSE(c.ok());
    CHECK(c.error().code() == code);
  };
  expect_error(alprd_metadata(64, {kOne}), parts, f64, Errc::corrupt);     // shift too wide
  expect_error(alprd_metadata(48, {0x10000}), parts, f64, Errc::corrupt);  // entry > 16 bits
  expect_error(alprd_metadata(48, {kOne}, 0, PType::u32), parts, f64, Errc::unsupported);
  expect_error(alprd_metadata(48, {kOne}), parts, DType::make_primitive(PType::i64, false),
               Errc::corrupt);
  expect_error(alprd_metadata(48, {kOne}), {parts[0]}, f64, Errc::corrupt);  // no right parts
  expect_error(alprd_metadata(48, {kOne}, 1), parts, f64, Errc::corrupt);    // no patch children
  // Right parts must be u64 for f64 (a u32 buffer is too short).
  expect_error(alprd_metadata(48, {kOne}), {parts[0], primitive_node<uint32_t>({0})}, f64,
               Errc::corrupt);
  // dict_len larger than the dictionary.
  pb::ALPRDMetadata m;
  m.set_right_bit_width(48);
  m.set_dict_len(2);
  m.add_dict(kOne);
  m.set_left_parts_ptype(static_cast<uint32_t>(PType::u16));
  expect_error(m.SerializeAsString(), parts, f64, Errc::corrupt);
}
