// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>

#include "format/proto/scalar.pb.h"
#include "format/proto/sequence.pb.h"
#include "tests/format/alp_golden.hpp"
#include "tests/format/fixtures.hpp"

using namespace oc;
using namespace oc::test;

namespace {

std::string sequence_meta(int64_t base, int64_t multiplier) {
  pb::ScalarValue b, m;
  b.set_int64_value(base);
  m.set_int64_value(multiplier);
  pb::SequenceMetadata meta;
  meta.set_base(b.SerializeAsString());
  meta.set_multiplier(m.SerializeAsString());
  return meta.SerializeAsString();
}

}  // namespace

TEST_CASE("vortex.sequence computes base + i * multiplier", "[format][sequence]") {
  auto c = decode(node("vortex.sequence", sequence_meta(-3, 4)),
                  DType::make_primitive(PType::i32, false), 4);
  REQUIRE(c.ok());
  CHECK(values_of<int32_t>(**c) == std::vector<int32_t>{-3, 1, 5, 9});

  c = decode(node("vortex.sequence", sequence_meta(250, 3)), DType::make_primitive(PType::u8, true),
             3);
  REQUIRE(c.ok());
  CHECK(values_of<uint8_t>(**c) ==
        std::vector<uint8_t>{250, 253, 0});  // wraps like the writer's type
  CHECK((*c)->null_count == 0);

  c = decode(node("vortex.sequence", sequence_meta(1, 1)), DType::make_primitive(PType::i64, false),
             0);
  REQUIRE(c.ok());
  CHECK((*c)->length == 0);
}

TEST_CASE("vortex.sequence rejects hostile input", "[format][sequence]") {
  const auto i16 = DType::make_primitive(PType::i16, false);
  CHECK(decode(node("vortex.sequence", sequence_meta(1 << 20, 1)), i16, 2).error().code() ==
        Errc::corrupt);
  CHECK(decode(node("vortex.sequence", ""), i16, 2).error().code() == Errc::corrupt);  // no base
  CHECK(decode(node("vortex.sequence", sequence_meta(0, 1)),
               DType::make_primitive(PType::f64, false), 2)
            .error()
            .code() == Errc::corrupt);
  CHECK(decode(node("vortex.sequence", sequence_meta(0, 1), {}, {primitive_node<int16_t>({1})}),
               i16, 2)
            .error()
            .code() == Errc::corrupt);
}

TEST_CASE("vortex.sequence golden segments decode like the reference writer",
          "[format][sequence][golden]") {
  for (const char* name : {"sequence_i64", "sequence_i32_descending"}) alp_golden::check(name);
}
