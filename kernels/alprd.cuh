// SPDX-License-Identifier: Apache-2.0
// Launch layer of the GPU ALP-RD combine: thin, returns cudaError_t.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace oc::kernels::detail {

/// left[i] |= right[i] for @p bytes bytes (a multiple of 4, 4-byte aligned).
cudaError_t launch_or_combine(uint32_t* left, const uint32_t* right, uint64_t bytes,
                              cudaStream_t stream);

}  // namespace oc::kernels::detail
