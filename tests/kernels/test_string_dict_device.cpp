// SPDX-License-Identifier: Apache-2.0
// The string dictionary decode on the GPU against the CPU decoder (onecopy-tests-gpu).
#include <cuda_runtime.h>

#include <catch2/catch.hpp>

#include "kernels/string_dict.hpp"
#include "tests/kernels/string_dict_cases.hpp"

using namespace oc;
using namespace oc::test;

TEST_CASE("the GPU string dictionary decode equals the CPU decoder",
          "[kernels][gpu][string_dict]") {
  for (uint64_t len : {0, 1, 1025, 3'000'001}) {
    for (const auto& c : string_dict_cases(len)) {
      INFO(c.name);
      format::DecodeContext ctx;
      auto plan = kernels::build_string_dict_plan(c.node, c.dtype, c.len, ctx);
      REQUIRE(plan.ok());
      auto expected = decode(c.node, c.dtype, c.len);
      REQUIRE(expected.ok());
      auto stream = kernels::Stream::create();
      REQUIRE(stream.ok());
      auto col = kernels::decode_strings_on_device(*plan, *stream);
      REQUIRE(col.ok());
      REQUIRE(col->finish(*stream).ok());
      std::vector<int32_t> offsets(len + 1);
      REQUIRE(cudaMemcpy(offsets.data(), col->offsets.data(), offsets.size() * 4,
                         cudaMemcpyDeviceToHost) == cudaSuccess);
      std::vector<uint8_t> data(static_cast<size_t>(offsets[len]));
      if (!data.empty()) {
        REQUIRE(cudaMemcpy(data.data(), col->data.data(), data.size(), cudaMemcpyDeviceToHost) ==
                cudaSuccess);
      }
      REQUIRE(compare_strings(offsets, data, plan->codes.validity, **expected) == "");
    }
  }
}
