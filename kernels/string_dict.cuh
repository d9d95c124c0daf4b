// SPDX-License-Identifier: Apache-2.0
// Launch layer of the string dictionary decode: thin, returns cudaError_t.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

#include "kernels/string_dict_stages.hpp"

namespace oc::kernels::detail {

/// Writes each row's length to p.offsets[i] and 0 to p.offsets[rows].
cudaError_t launch_string_lengths(const StringDictParams& p, cudaStream_t stream);
/// In-place exclusive sum of @p n int32 at @p values (CUB's two-phase protocol: a null
/// @p scratch only sets @p scratch_bytes).
cudaError_t exclusive_sum(void* scratch, size_t& scratch_bytes, int32_t* values, uint64_t n,
                          cudaStream_t stream);
/// Copies every row's bytes into p.data at its offset.
cudaError_t launch_string_gather(const StringDictParams& p, cudaStream_t stream);

}  // namespace oc::kernels::detail
