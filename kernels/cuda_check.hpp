// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief Turns CUDA runtime status codes into `Result`s: every CUDA call is checked.
#pragma once

#include <cuda_runtime.h>

#include "config/error.hpp"

namespace oc::kernels {

/// @return success, or `Errc::cuda` naming @p what and the runtime's error name and text.
[[nodiscard]] inline Result<void> cuda_check(cudaError_t rc, const char* what) {
  if (rc == cudaSuccess) return {};
  return OC_ERROR(Errc::cuda, "{}: {} ({})", what, cudaGetErrorName(rc), cudaGetErrorString(rc));
}

}  // namespace oc::kernels
