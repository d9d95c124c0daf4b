// SPDX-License-Identifier: Apache-2.0
// Launch layer of the GPU FSST decode: thin, returns cudaError_t.
#pragma once

#include <cuda_runtime.h>

#include "kernels/fsst_stages.hpp"

namespace oc::kernels::detail {

/// One thread per row; any corrupt row sets @p error to a non-zero value.
cudaError_t launch_fsst_decode(const FsstParams& p, uint32_t* error, cudaStream_t stream);

}  // namespace oc::kernels::detail
