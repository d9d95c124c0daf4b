// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>

#include "format/proto/datetime_parts.pb.h"
#include "tests/format/nested_golden.hpp"

using namespace oc;
using namespace oc::test;
using namespace oc::test::nested_golden;
using format::TimeUnit;

namespace {

std::string parts_meta(PType days, PType seconds, PType subseconds) {
  pb::DateTimePartsMetadata m;
  m.set_days_ptype(static_cast<int32_t>(days));
  m.set_seconds_ptype(static_cast<int32_t>(seconds));
  m.set_subseconds_ptype(static_cast<int32_t>(subseconds));
  return m.SerializeAsString();
}

DTypePtr timestamp(TimeUnit unit, bool nullable, const std::string& tz = {}) {
  return make_temporal("vortex.timestamp", unit, PType::i64, nullable, tz);
}

}  // namespace

TEST_CASE("vortex.datetimeparts golden segments decode like the oracle",
          "[format][datetime_parts]") {
  check_golden("timestamp_s_tz", timestamp(TimeUnit::s, true, "Europe/Paris"));
  check_golden("timestamp_ms_tz", timestamp(TimeUnit::ms, true, "Europe/Paris"));
  check_golden("timestamp_us_tz", timestamp(TimeUnit::us, true, "Europe/Paris"));
  check_golden("timestamp_ns_tz", timestamp(TimeUnit::ns, true, "Europe/Paris"));
  check_golden("timestamp_s_negative_days", timestamp(TimeUnit::s, false));
}

TEST_CASE("vortex.datetimeparts metadata matches upstream's golden file",
          "[format][datetime_parts]") {
  // encodings/datetime-parts/goldenfiles/datetimeparts.metadata: three i64 ptypes.
  const std::vector<uint8_t> golden = {0x08, 0x07, 0x10, 0x07, 0x18, 0x07};
  auto m = format::parse_metadata<pb::DateTimePartsMetadata>(golden, "vortex.datetimeparts");
  REQUIRE(m.ok());
  CHECK(m->days_ptype() == static_cast<int32_t>(PType::i64));
  CHECK(m->seconds_ptype() == static_cast<int32_t>(PType::i64));
  CHECK(m->subseconds_ptype() == static_cast<int32_t>(PType::i64));
  const auto ours = parts_meta(PType::i64, PType::i64, PType::i64);
  CHECK(std::vector<uint8_t>(ours.begin(), ours.end()) == golden);
}

TEST_CASE("vortex.datetimeparts combines parts per time unit", "[format][datetime_parts]") {
  // Upstream's own round-trip values in ms: +-1 day, with seconds and subseconds, and nulls.
  auto days = primitive_node<int8_t>({1, -1, 1, -1, 1, -1});
  days.children.push_back(bool_node({true, true, false, true, true, true}));
  auto n = node("vortex.datetimeparts", parts_meta(PType::i8, PType::i16, PType::i32), {},
                {days, primitive_node<int16_t>({0, 0, 1, -1, 1, -1}),
                 primitive_node<int32_t>({0, 0, 0, 0, 1, -1})});
  auto c = decode(n, timestamp(TimeUnit::ms, true, "UTC"), 6);
  REQUIRE(c.ok());
  const auto v = values_of<int64_t>(**c);
  CHECK(v[0] == 86'400'000);
  CHECK(v[1] == -86'400'000);
  CHECK(v[3] == -86'401'000);
  CHECK(v[4] == 86'401'001);
  CHECK(v[5] == -86'401'001);
  CHECK(validity_of(**c) == std::vector<bool>{true, true, false, true, true, true});

  for (auto [unit, per_second] : {std::pair{TimeUnit::s, 1}, std::pair{TimeUnit::us, 1'000'000},
                                  std::pair{TimeUnit::ns, 1'000'000'000}}) {
    auto one = node("vortex.datetimeparts", parts_meta(PType::u16, PType::u32, PType::u32), {},
                    {primitive_node<uint16_t>({2}), primitive_node<uint32_t>({3}),
                     primitive_node<uint32_t>({4})});
    auto r = decode(one, timestamp(unit, false), 1);
    REQUIRE(r.ok());
    CHECK(values_of<int64_t>(**r)[0] == (2 * 86'400 + 3) * int64_t{per_second} + 4);
  }
}

TEST_CASE("vortex.datetimeparts rejects what is not a sub-day timestamp",
          "[format][datetime_parts]") {
  auto n = node(
      "vortex.datetimeparts", parts_meta(PType::i32, PType::i32, PType::i32), {},
      {primitive_node<int32_t>({1}), primitive_node<int32_t>({1}), primitive_node<int32_t>({1})});
  CHECK(decode(n, timestamp(TimeUnit::days, false), 1).error().code() == Errc::corrupt);
  CHECK(decode(n, make_temporal("vortex.date", TimeUnit::days, PType::i32, false), 1)
            .error()
            .code() == Errc::corrupt);
  CHECK(decode(n, DType::make_primitive(PType::i64, false), 1).error().code() == Errc::unsupported);
  auto floats = n;
  floats.metadata.clear();
  const auto m = parts_meta(PType::f32, PType::i32, PType::i32);
  floats.metadata.assign(m.begin(), m.end());
  CHECK(decode(floats, timestamp(TimeUnit::s, false), 1).error().code() == Errc::corrupt);
  n.children.pop_back();
  CHECK(decode(n, timestamp(TimeUnit::s, false), 1).error().code() == Errc::corrupt);
}
