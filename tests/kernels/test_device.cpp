// SPDX-License-Identifier: Apache-2.0
// probe_devices against the CUDA runtime itself: it must report what cudaGetDeviceCount reports
// (a build without nvcc: no device, and a reason that says so), the same way every time.
#include <catch2/catch.hpp>
#include <string>

#include "kernels/device.hpp"
#include "kernels/frame_of_reference.hpp"
#include "onecopy_build_config.h"

#if OC_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

TEST_CASE("device probing agrees with the CUDA runtime and explains an absent GPU", "[kernels]") {
  const auto info = oc::kernels::probe_devices();
  INFO("count " << info.count << ", why_none: " << info.why_none);
  // A test binary linked against the other kernels library would probe the wrong thing.
  CHECK(oc::kernels::built_with_cuda() == bool(OC_HAVE_CUDA));
#if OC_HAVE_CUDA
  int runtime_count = -1;
  const cudaError_t rc = cudaGetDeviceCount(&runtime_count);
  cudaGetLastError();  // leave no sticky error for the tests after this one
  if (rc != cudaSuccess) {
    // No driver (cudaErrorInsufficientDriver, 35) or no device (100): none usable, and the
    // reason names the runtime's error so a SKIP line or a log says which.
    INFO("cudaGetDeviceCount: " << cudaGetErrorName(rc));
    CHECK(info.count == 0);
    CHECK(info.why_none.find(cudaGetErrorName(rc)) != std::string::npos);
  } else {
    CHECK(info.count == runtime_count);
  }
#else
  CHECK(info.count == 0);
  CHECK(info.why_none.find("without CUDA") != std::string::npos);
#endif
  if (info.count == 0) {
    CHECK_FALSE(info.why_none.empty());
    CHECK(info.name.empty());
    CHECK(info.memory_total_bytes == 0);
    CHECK(info.memory_used_bytes == 0);
    std::vector<int32_t> v{1, 2, 3};
    auto r = oc::kernels::add_reference_on_device<int32_t>(v, 5);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code() == oc::Errc::cuda);
    CHECK(v == std::vector<int32_t>{1, 2, 3});  // untouched on failure
  } else {
    CHECK(info.why_none.empty());
    CHECK_FALSE(info.name.empty());
    CHECK(info.compute_major > 0);
    CHECK(info.memory_total_bytes > 0);
    CHECK(info.memory_used_bytes <= info.memory_total_bytes);
  }
}

TEST_CASE("probing devices twice gives the same answer", "[kernels]") {
  // The first probe may create contexts and clears the runtime's sticky error; neither may
  // change what a later probe (onecopyd's status, a SKIP line) reports.
  const auto a = oc::kernels::probe_devices();
  const auto b = oc::kernels::probe_devices();
  CHECK(a.count == b.count);
  CHECK(a.why_none == b.why_none);
  CHECK(a.name == b.name);
  CHECK(a.compute_major == b.compute_major);
  CHECK(a.compute_minor == b.compute_minor);
  // Used memory moves with other processes; the total does not.
  CHECK(a.memory_total_bytes == b.memory_total_bytes);
}
