// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>

#include "kernels/device.hpp"
#include "kernels/frame_of_reference.hpp"

TEST_CASE("device probing never fails and explains an absent GPU", "[kernels]") {
  const auto info = oc::kernels::probe_devices();
  CHECK(info.count >= 0);
  if (info.count == 0) {
    CHECK_FALSE(info.why_none.empty());
    CHECK(info.memory_total_bytes == 0);
    CHECK(info.memory_used_bytes == 0);
    std::vector<int32_t> v{1, 2, 3};
    auto r = oc::kernels::add_reference_on_device<int32_t>(v, 5);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code() == oc::Errc::cuda);
    CHECK(v == std::vector<int32_t>{1, 2, 3});  // untouched on failure
  } else {
    CHECK_FALSE(info.name.empty());
    CHECK(info.memory_total_bytes > 0);
    CHECK(info.memory_used_bytes <= info.memory_total_bytes);
  }
}
