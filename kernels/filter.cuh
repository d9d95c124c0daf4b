// SPDX-License-Identifier: Apache-2.0
// Launch layer of the GPU filter: thin, returns cudaError_t (see fused_decode.cuh for why).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

#include "kernels/filter_stages.hpp"

namespace oc::kernels::detail {

/// Writes the selection mask of the @p n rows at @p values / @p validity (null: all valid) into
/// @p mask (n bytes); layouts in kernels/filter_stages.hpp.
cudaError_t launch_select(const Predicate& p, const void* values, const uint8_t* validity,
                          uint64_t n, uint8_t* mask, cudaStream_t stream);

/// cub::DeviceSelect::Flagged over values of @p value_bytes bytes; with @p scratch null it only
/// sets @p scratch_bytes (CUB's two-phase protocol).
cudaError_t compact_flagged(unsigned value_bytes, void* scratch, size_t& scratch_bytes,
                            const void* values, const uint8_t* mask, void* out, uint64_t* selected,
                            uint64_t n, cudaStream_t stream);

}  // namespace oc::kernels::detail
