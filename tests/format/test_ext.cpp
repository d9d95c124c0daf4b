// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>

#include "tests/format/nested_golden.hpp"

using namespace oc;
using namespace oc::test;
using namespace oc::test::nested_golden;
using format::TimeUnit;

TEST_CASE("vortex.ext golden segments decode like the oracle", "[format][ext]") {
  auto date = make_temporal("vortex.date", TimeUnit::days, PType::i32, true);
  auto c = check_golden("date32", date);
  CHECK(*format::arrow_format(*c->dtype, format::StringLayout::views) == "tdD");
  auto time = make_temporal("vortex.time", TimeUnit::us, PType::i64, true);
  c = check_golden("time64_us", time);
  CHECK(*format::arrow_format(*c->dtype, format::StringLayout::views) == "ttu");
  auto ts = make_temporal("vortex.timestamp", TimeUnit::ms, PType::i64, true, "UTC");
  c = check_golden("timestamp_ms_ext", ts);
  CHECK(*format::arrow_format(*c->dtype, format::StringLayout::views) == "tsm:UTC");
}

TEST_CASE("vortex.ext relabels its storage with the extension dtype", "[format][ext]") {
  auto t = make_temporal("vortex.date", TimeUnit::days, PType::i32, true);
  auto storage = primitive_node<int32_t>({7, -1, 3});
  storage.children.push_back(bool_node({true, false, true}));
  auto c = decode(node("vortex.ext", {}, {}, {storage}), t, 3);
  REQUIRE(c.ok());
  CHECK(*(*c)->dtype == *t);
  CHECK(values_of<int32_t>(**c) == std::vector<int32_t>{7, -1, 3});
  CHECK((*c)->null_count == 1);
}

TEST_CASE("vortex.ext rejects a wrong shape or dtype", "[format][ext]") {
  auto t = make_temporal("vortex.date", TimeUnit::days, PType::i32, false);
  CHECK(decode(node("vortex.ext"), t, 0).error().code() == Errc::corrupt);
  auto n = node("vortex.ext", {}, {}, {primitive_node<int32_t>({1})});
  CHECK(decode(n, DType::make_primitive(PType::i32, false), 1).error().code() == Errc::corrupt);
  n.metadata = {1};
  CHECK(decode(n, t, 1).error().code() == Errc::corrupt);
}
