// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "format/encodings/alp.hpp"
#include "format/proto/alp.pb.h"
#include "tests/format/alp_golden.hpp"
#include "tests/format/fixtures.hpp"

using namespace oc;
using namespace oc::test;

namespace {

std::string alp_metadata(uint32_t e, uint32_t f, const pb::PatchesMetadata* patches = nullptr) {
  pb::ALPMetadata m;
  m.set_exp_e(e);
  m.set_exp_f(f);
  if (patches) *m.mutable_patches() = *patches;
  return m.SerializeAsString();
}

pb::PatchesMetadata patches_metadata(uint64_t len, PType indices) {
  pb::PatchesMetadata p;
  p.set_len(len);
  p.set_indices_ptype(static_cast<uint32_t>(indices));
  return p;
}

}  // namespace

TEST_CASE("vortex.alp metadata parses the upstream golden bytes", "[format][alp]") {
  // encodings/alp/goldenfiles/alp.metadata: e = f = u32::MAX, patches { len = offset = u64::MAX,
  // indices_ptype = u64 }.
  const std::vector<uint8_t> golden = {0x08, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x10, 0xff, 0xff, 0xff,
                                       0xff, 0x0f, 0x1a, 0x18, 0x08, 0xff, 0xff, 0xff, 0xff, 0xff,
                                       0xff, 0xff, 0xff, 0xff, 0x01, 0x10, 0xff, 0xff, 0xff, 0xff,
                                       0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0x18, 0x03};
  auto m = format::parse_metadata<pb::ALPMetadata>(golden, "vortex.alp");
  REQUIRE(m.ok());
  CHECK(m->exp_e() == std::numeric_limits<uint32_t>::max());
  CHECK(m->exp_f() == std::numeric_limits<uint32_t>::max());
  REQUIRE(m->has_patches());
  CHECK(m->patches().len() == std::numeric_limits<uint64_t>::max());
  CHECK(m->patches().offset() == std::numeric_limits<uint64_t>::max());
  CHECK(m->patches().indices_ptype() == static_cast<uint32_t>(PType::u64));
  CHECK_FALSE(m->patches().has_chunk_offsets_ptype());
  const std::string again = m->SerializeAsString();
  CHECK(std::vector<uint8_t>(again.begin(), again.end()) == golden);

  // Those exponents are out of range for any float type.
  auto n = node("vortex.alp", std::string(golden.begin(), golden.end()), {},
                {primitive_node<int64_t>({1})});
  auto c = decode(n, DType::make_primitive(PType::f64, false), 1);
  REQUIRE_FALSE(c.ok());
  CHECK(c.error().code() == Errc::corrupt);
}

TEST_CASE("vortex.alp golden segments with sparse and run-end integers", "[format][alp]") {
  // Exponents e=16 f=14 (f64) and e=8 f=6 (f32), NaN and -0.0 as patches with chunk offsets.
  alp_golden::check("alp_f64_sparse_encoded");
  alp_golden::check("alp_f32_sparse_encoded");
  alp_golden::check("alp_f64_runend_encoded");
}

TEST_CASE("vortex.alp golden segments with bit-packed integers, nulls and specials",
          "[format][alp]") {
  // Needs fastlanes.for and fastlanes.bitpacked; NaN, +-inf and -0.0 are patches.
  auto c = alp_golden::check("alp_f64_patches_nulls");
  CHECK(c->null_count > 0);
  alp_golden::check("alp_f32_patches");
}

TEST_CASE("vortex.alp multiplies by 10^f, then by 10^-e, in the float's precision",
          "[format][alp]") {
  using format::alp::Powers;
  // The tables hold the nearest value to each literal, not computed powers.
  CHECK(Powers<double>::kIF10[1] == 0.1);
  CHECK(Powers<float>::kIF10[3] == 0.001f);
  CHECK(Powers<double>::kF10[23] == 1e23);
  // For these inputs (x * 10^f) * 10^-e, the writer's order, differs from both x * 10^(f-e) and
  // (x * 10^-e) * 10^f, so a decoder with another order fails here.
  constexpr int64_t kEncoded = 123456789;
  const double ordered = static_cast<double>(kEncoded) * 1e14 * 1e-16;
  CHECK(ordered != static_cast<double>(kEncoded) * 1e-2);
  CHECK(ordered != static_cast<double>(kEncoded) * 1e-16 * 1e14);
  CHECK(format::alp::decode_with_exponents<double>(kEncoded, 16, 14) == ordered);
  constexpr int32_t kEncoded32 = 123457;
  const float ordered32 = static_cast<float>(kEncoded32) * 1e6f * 1e-8f;
  CHECK(ordered32 != static_cast<float>(kEncoded32) * 1e-2f);
  CHECK(ordered32 != static_cast<float>(kEncoded32) * 1e-8f * 1e6f);
  CHECK(format::alp::decode_with_exponents<float>(kEncoded32, 8, 6) == ordered32);
}

TEST_CASE("vortex.alp takes validity from its encoded child and patches over it", "[format][alp]") {
  auto encoded = primitive_node<int64_t>({15, 0, -7, 0});
  encoded.children.push_back(bool_node({true, false, true, true}));
  auto patches = patches_metadata(1, PType::u8);
  auto n = node("vortex.alp", alp_metadata(0, 1, &patches), {},
                {encoded, primitive_node<uint8_t>({3}),
                 primitive_node<double>({std::numeric_limits<double>::quiet_NaN()})});
  auto c = decode(n, DType::make_primitive(PType::f64, true), 4);
  REQUIRE(c.ok());
  CHECK(validity_of(**c) == std::vector<bool>{true, false, true, true});
  CHECK((*c)->null_count == 1);
  auto v = values_of<double>(**c);
  CHECK(v[0] == 150.0);
  CHECK(v[2] == -70.0);
  CHECK(std::isnan(v[3]));
}

TEST_CASE("vortex.alp decodes empty and single-value arrays", "[format][alp]") {
  auto c = decode(node("vortex.alp", alp_metadata(0, 0), {}, {primitive_node<int32_t>({})}),
                  DType::make_primitive(PType::f32, false), 0);
  REQUIRE(c.ok());
  CHECK((*c)->length == 0);
  c = decode(node("vortex.alp", alp_metadata(2, 2), {}, {primitive_node<int32_t>({-3})}),
             DType::make_primitive(PType::f32, false), 1);
  REQUIRE(c.ok());
  CHECK(values_of<float>(**c)[0] == static_cast<float>(-3) * 100.0f * 0.01f);
}

TEST_CASE("vortex.alp rejects malformed nodes", "[format][alp]") {
  const auto f64 = DType::make_primitive(PType::f64, false);
  auto one = primitive_node<int64_t>({1});
  auto expect_error = [](const ArrayView& n, const DTypePtr& t, Errc code) {
    auto c = decode(n, t, 1);
    REQUIRE_FALSE(c.ok());
    CHECK(c.error().code() == code);
  };
  // Exponents past 18 (f64) or 10 (f32).
  expect_error(node("vortex.alp", alp_metadata(19, 0), {}, {one}), f64, Errc::corrupt);
  expect_error(node("vortex.alp", alp_metadata(0, 11), {}, {primitive_node<int32_t>({1})}),
               DType::make_primitive(PType::f32, false), Errc::corrupt);
  // Not a float type.
  expect_error(node("vortex.alp", alp_metadata(0, 0), {}, {one}),
               DType::make_primitive(PType::i64, false), Errc::corrupt);
  expect_error(node("vortex.alp", alp_metadata(0, 0), {}, {one}),
               DType::make_primitive(PType::f16, false), Errc::corrupt);
  // No encoded child; patch children without patch metadata; missing patch children.
  expect_error(node("vortex.alp", alp_metadata(0, 0)), f64, Errc::corrupt);
  expect_error(node("vortex.alp", alp_metadata(0, 0), {},
                    {one, primitive_node<uint8_t>({0}), primitive_node<double>({1.0})}),
               f64, Errc::corrupt);
  auto patches = patches_metadata(1, PType::u8);
  expect_error(node("vortex.alp", alp_metadata(0, 0, &patches), {}, {one}), f64, Errc::corrupt);
  // A patch index past the end; an encoded child of the wrong width.
  expect_error(node("vortex.alp", alp_metadata(0, 0, &patches), {},
                    {one, primitive_node<uint8_t>({1}), primitive_node<double>({1.0})}),
               f64, Errc::corrupt);
  expect_error(node("vortex.alp", alp_metadata(0, 0), {}, {primitive_node<int32_t>({1})}), f64,
               Errc::corrupt);
  // Garbage metadata.
  expect_error(node("vortex.alp", "\xff\xff", {}, {one}), f64, Errc::corrupt);
}

TEST_CASE("vortex.alp patches follow vortex-data's shape: some patches, chunk offsets decoded",
          "[format][alp]") {
  const auto f64 = DType::make_primitive(PType::f64, false);
  auto one = primitive_node<int64_t>({1});
  // Empty patches: vortex-data refuses "Patch indices must not be empty".
  auto empty = patches_metadata(0, PType::u8);
  auto r = decode(node("vortex.alp", alp_metadata(0, 0, &empty), {},
                       {one, primitive_node<uint8_t>({}), primitive_node<double>({})}),
                  f64, 1);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code() == Errc::corrupt);
  CHECK(r.error().to_string().find("no patches") != std::string::npos);
  // Chunk offsets: child 3 has chunk_offsets_len rows of chunk_offsets_ptype.
  auto chunked = patches_metadata(1, PType::u8);
  chunked.set_chunk_offsets_len(1);
  chunked.set_chunk_offsets_ptype(static_cast<uint32_t>(PType::u32));
  auto n = node("vortex.alp", alp_metadata(0, 0, &chunked), {},
                {one, primitive_node<uint8_t>({0}), primitive_node<double>({2.5}),
                 primitive_node<uint32_t>({0})});
  auto c = decode(n, f64, 1);
  REQUIRE(c.ok());
  CHECK(values_of<double>(**c)[0] == 2.5);
  n.children[3] = primitive_node<uint32_t>({0, 1});
  r = decode(n, f64, 1);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code() == Errc::corrupt);
  CHECK(r.error().to_string().find("chunk offsets") != std::string::npos);
}
