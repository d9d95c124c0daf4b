// SPDX-License-Identifier: Apache-2.0
// Launch layer of fastlanes.for on the GPU: thin, returns cudaError_t, no host-side C++ library
// (nvcc cannot compile fmt, so Result-returning code lives in the .cpp above this).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace oc::kernels::detail {

/// Adds @p reference to @p n values at device pointer @p values, wrapping modulo 2^bits.
template <class T>
cudaError_t launch_add_reference(T* values, uint64_t n, T reference, cudaStream_t stream);

}  // namespace oc::kernels::detail
