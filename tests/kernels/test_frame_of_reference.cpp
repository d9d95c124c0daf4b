// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>
#include <random>
#include <vector>

#include "kernels/frame_of_reference.hpp"

TEMPLATE_TEST_CASE("add_reference_on_device equals the CPU's wrapping add", "[kernels][gpu][for]",
                   int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t) {
  using U = std::make_unsigned_t<TestType>;
  const size_t n =
      GENERATE(size_t{0}, size_t{1}, size_t{1023}, size_t{1024}, size_t{1025}, size_t{3'000'001});
  std::mt19937_64 rng(n + sizeof(TestType));
  std::vector<TestType> values(n);
  for (auto& v : values) v = static_cast<TestType>(rng());
  const auto reference = static_cast<TestType>(rng());
  std::vector<TestType> expected(n);
  for (size_t i = 0; i < n; ++i)
    expected[i] = static_cast<TestType>(static_cast<U>(values[i]) + static_cast<U>(reference));
  REQUIRE(oc::kernels::add_reference_on_device<TestType>(values, reference).ok());
  REQUIRE(values == expected);
}
