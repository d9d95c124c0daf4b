// SPDX-License-Identifier: Apache-2.0
// The GPU filter's predicate code, on the CPU (the selection kernel runs the same function;
// onecopy-tests-gpu checks the kernel and the CUB compaction against this).
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "kernels/filter.hpp"

using namespace oc;
using kernels::CompareOp;
using kernels::Predicate;
using kernels::ValueKind;

namespace {

constexpr CompareOp kOps[] = {CompareOp::eq, CompareOp::ne, CompareOp::lt, CompareOp::le, CompareOp::gt, CompareOp::ge};

template <class T>
bool reference(CompareOp op, T a, T b) {
  switch (op) {
    case CompareOp::eq: return a == b;
    case CompareOp::ne: return a != b;
    case CompareOp::lt: return a < b;
    case CompareOp::le: return a <= b;
    case CompareOp::gt: return a > b;
    default: return a >= b;
  }
}

template <class T>
uint64_t bits_of(T v) {
  uint64_t b = 0;
  std::memcpy(&b, &v, sizeof(T));
  return b;
}

template <class T>
ValueKind kind_of() {
  return std::is_floating_point_v<T> ? ValueKind::floating
         : std::is_signed_v<T>       ? ValueKind::signed_int
                                     : ValueKind::unsigned_int;
}

}  // namespace

TEMPLATE_TEST_CASE("select_on_host equals the C++ comparison for every op and type", "[kernels][filter]",
                   int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t, float, double) {
  std::mt19937_64 rng(sizeof(TestType) * 7 + std::is_signed_v<TestType>);
  std::vector<TestType> values(5000);
  for (auto& v : values) {
    if constexpr (std::is_floating_point_v<TestType>) {
      v = static_cast<TestType>(static_cast<int>(rng() % 200) - 100) / 8;
    } else {
      v = static_cast<TestType>(rng() % 64);  // small values: equal ones are common
      if constexpr (std::is_signed_v<TestType>) v = static_cast<TestType>(v - 32);
    }
  }
  if constexpr (std::is_floating_point_v<TestType>) {
    values[0] = std::numeric_limits<TestType>::quiet_NaN();
    values[1] = TestType(-0.0);
    values[2] = TestType(0.0);
    values[3] = std::numeric_limits<TestType>::infinity();
    values[4] = -std::numeric_limits<TestType>::infinity();
  }
  std::vector<TestType> literals = {values[5], values[6], TestType(0)};
  if constexpr (std::is_floating_point_v<TestType>) {
    literals.push_back(std::numeric_limits<TestType>::quiet_NaN());
    literals.push_back(TestType(-0.0));
  }
  for (CompareOp op : kOps) {
    for (TestType literal : literals) {
      INFO("op " << static_cast<int>(op) << " literal " << +literal);
      Predicate p{op, kind_of<TestType>(), static_cast<uint8_t>(sizeof(TestType)), bits_of(literal)};
      auto mask = kernels::select_on_host(p, values.data(), values.size());
      REQUIRE(mask.ok());
      for (size_t i = 0; i < values.size(); ++i) {
        if ((*mask)[i] != (reference(op, values[i], literal) ? 1 : 0)) FAIL("row " << i << " value " << +values[i]);
      }
    }
  }
}

TEST_CASE("select_on_host refuses widths it has no filter for", "[kernels][filter]") {
  CHECK(kernels::select_on_host({CompareOp::eq, ValueKind::floating, 2, 0}, nullptr, 0).error().code() ==
        Errc::invalid);
  CHECK(kernels::select_on_host({CompareOp::eq, ValueKind::signed_int, 16, 0}, nullptr, 0).error().code() ==
        Errc::invalid);
}
