// SPDX-License-Identifier: Apache-2.0
// The GPU ALP-RD decode against the CPU decoder, bit for bit (onecopy-tests-gpu).
#include <cuda_runtime.h>

#include <catch2/catch.hpp>

#include "kernels/alprd.hpp"
#include "tests/kernels/alprd_cases.hpp"

using namespace oc;
using namespace oc::test;

TEST_CASE("the GPU ALP-RD decode equals the CPU decoder", "[kernels][gpu][alprd]") {
  for (uint64_t len : {0, 1, 1025, 3'000'001}) {
    for (bool f32 : {false, true}) {
      for (bool nulls : {false, true}) {
        INFO("len " << len << " f32 " << f32 << " nulls " << nulls);
        std::mt19937_64 rng(len * 4 + f32 * 2 + nulls);
        auto n = alprd_rows(len, f32, nulls, rng);
        const auto t = DType::make_primitive(f32 ? PType::f32 : PType::f64, nulls);
        format::DecodeContext ctx;
        auto plan = kernels::build_alprd_plan(n, t, len, ctx);
        REQUIRE(plan.ok());
        auto expected = decode(n, t, len);
        REQUIRE(expected.ok());
        auto stream = kernels::Stream::create();
        REQUIRE(stream.ok());
        auto col = kernels::decode_alprd_on_device(*plan, *stream);
        REQUIRE(col.ok());
        REQUIRE(col->finish(*stream).ok());
        std::vector<uint8_t> got(col->left.values.size());
        if (!got.empty()) {
          REQUIRE(cudaMemcpy(got.data(), col->left.values.data(), got.size(),
                             cudaMemcpyDeviceToHost) == cudaSuccess);
        }
        REQUIRE(compare_rows(got, plan->left.validity, **expected) == "");
      }
    }
  }
}
