// SPDX-License-Identifier: Apache-2.0
// The gather kernel: grid-stride over octets of output rows (kernels/gather_stages.hpp); each
// thread adds its octet's nulls to the block's count in shared memory, one atomic per block.
// Untested on GPU hardware so far.
#include "kernels/config.cuh"
#include "kernels/gather.cuh"

namespace oc::kernels::detail {
namespace {

__global__ void __launch_bounds__(kThreadsPerBlock) gather_kernel(const GatherParams p) {
  __shared__ unsigned long long block_nulls;
  if (threadIdx.x == 0) block_nulls = 0;
  __syncthreads();
  unsigned long long nulls = 0;
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  for (uint64_t k = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; k < p.octets();
       k += stride) {
    nulls += gather_octet(p, k);
  }
  if (nulls != 0) atomicAdd(&block_nulls, nulls);
  __syncthreads();
  if (threadIdx.x == 0 && block_nulls != 0 && p.nulls != nullptr) atomicAdd(p.nulls, block_nulls);
}

}  // namespace

cudaError_t launch_gather(const GatherParams& p, cudaStream_t stream) {
  if (p.n == 0) return cudaSuccess;
  uint64_t blocks = (p.octets() + kThreadsPerBlock - 1) / kThreadsPerBlock;
  if (blocks > kMaxGridBlocks) blocks = kMaxGridBlocks;
  gather_kernel<<<static_cast<unsigned>(blocks), kThreadsPerBlock, 0, stream>>>(p);
  return cudaGetLastError();
}

}  // namespace oc::kernels::detail
