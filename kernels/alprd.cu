// SPDX-License-Identifier: Apache-2.0
// The ALP-RD combine, over 32-bit words (f32 and f64 bits alike). Untested on GPU hardware.
#include "kernels/alprd.cuh"
#include "kernels/config.cuh"

namespace oc::kernels::detail {
namespace {

__global__ void __launch_bounds__(kThreadsPerBlock)
    or_kernel(uint32_t* left, const uint32_t* right, uint64_t n) {
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  for (uint64_t i = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; i < n;
       i += stride) {
    left[i] |= right[i];
  }
}

}  // namespace

cudaError_t launch_or_combine(uint32_t* left, const uint32_t* right, uint64_t bytes,
                              cudaStream_t stream) {
  const uint64_t n = bytes / 4;
  if (n == 0) return cudaSuccess;
  uint64_t blocks = (n + kThreadsPerBlock - 1) / kThreadsPerBlock;
  if (blocks > kMaxGridBlocks) blocks = kMaxGridBlocks;
  or_kernel<<<static_cast<unsigned>(blocks), kThreadsPerBlock, 0, stream>>>(left, right, n);
  return cudaGetLastError();
}

}  // namespace oc::kernels::detail
