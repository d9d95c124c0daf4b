// SPDX-License-Identifier: Apache-2.0
// The GPU FSST decode against the CPU decoder (onecopy-tests-gpu).
#include <cuda_runtime.h>

#include <catch2/catch.hpp>

#include "kernels/fsst.hpp"
#include "tests/kernels/fsst_cases.hpp"

using namespace oc;
using namespace oc::test;

TEST_CASE("the GPU FSST decode equals the CPU decoder", "[kernels][gpu][fsst]") {
  for (uint64_t len : {0, 1, 1025, 3'000'001}) {
    for (bool nulls : {false, true}) {
      INFO("len " << len << " nulls " << nulls);
      std::mt19937_64 rng(len + nulls);
      auto n = fsst_rows(len, nulls, rng);
      const auto t = DType::make_utf8(nulls);
      format::DecodeContext ctx;
      auto plan = kernels::build_fsst_plan(n, t, len, ctx);
      REQUIRE(plan.ok());
      auto expected = decode(n, t, len);
      REQUIRE(expected.ok());
      auto stream = kernels::Stream::create();
      REQUIRE(stream.ok());
      auto col = kernels::decode_fsst_on_device(*plan, *stream);
      REQUIRE(col.ok());
      REQUIRE(col->finish(*stream).ok());
      std::vector<int32_t> offsets(len + 1);
      REQUIRE(cudaMemcpy(offsets.data(), col->offsets.data(), offsets.size() * 4,
                         cudaMemcpyDeviceToHost) == cudaSuccess);
      std::vector<uint8_t> data(col->data.size());
      if (!data.empty()) {
        REQUIRE(cudaMemcpy(data.data(), col->data.data(), data.size(), cudaMemcpyDeviceToHost) ==
                cudaSuccess);
      }
      REQUIRE(compare_strings(offsets, data, plan->validity, **expected) == "");
    }
  }
}
