// SPDX-License-Identifier: Apache-2.0
// Launch layer of the gather: thin, returns cudaError_t.
#pragma once

#include <cuda_runtime.h>

#include "kernels/gather_stages.hpp"

namespace oc::kernels::detail {

/// Launches the gather of @p p (device pointers) on @p stream; no rows launch nothing.
cudaError_t launch_gather(const GatherParams& p, cudaStream_t stream);

}  // namespace oc::kernels::detail
