// SPDX-License-Identifier: Apache-2.0
// Launch layer of the fused decode: thin, returns cudaError_t (nvcc does not compile fmt, so the
// Result-returning code lives in fused_decode.cpp above it).
#pragma once

#include <cuda_runtime.h>

#include "kernels/fused_block.hpp"

namespace oc::kernels::detail {

/// Launches the fused kernel for @p params (device pointers) on @p stream: one block of
/// kThreadsPerBlock threads per tile of 1024 packed positions, grid-striding past kMaxGridBlocks.
/// Zero rows launch nothing.
cudaError_t launch_fused_decode(const FusedParams& params, cudaStream_t stream);

/// Launches one kernel for every plan of @p batch (device pointers) on @p stream: one block per
/// block-tile, grid-striding past kMaxGridBlocks. No tiles launch nothing.
cudaError_t launch_fused_batch(const FusedBatchParams& batch, cudaStream_t stream);

}  // namespace oc::kernels::detail
