// SPDX-License-Identifier: Apache-2.0
// One thread per row, grid-stride: a first version (rows of very different lengths leave warps
// idle; a warp per long row is the tuning step). Untested on GPU hardware so far.
#include "kernels/config.cuh"
#include "kernels/fsst.cuh"

namespace oc::kernels::detail {
namespace {

__global__ void __launch_bounds__(kThreadsPerBlock)
    fsst_kernel(const FsstParams p, uint32_t* error) {
  bool failed = false;
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  for (uint64_t i = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; i < p.rows;
       i += stride) {
    failed |= !fsst_decode_row(p, i);
  }
  if (failed) atomicOr(error, 1u);
}

}  // namespace

cudaError_t launch_fsst_decode(const FsstParams& p, uint32_t* error, cudaStream_t stream) {
  if (p.rows == 0) return cudaSuccess;
  uint64_t blocks = (p.rows + kThreadsPerBlock - 1) / kThreadsPerBlock;
  if (blocks > kMaxGridBlocks) blocks = kMaxGridBlocks;
  fsst_kernel<<<static_cast<unsigned>(blocks), kThreadsPerBlock, 0, stream>>>(p, error);
  return cudaGetLastError();
}

}  // namespace oc::kernels::detail
