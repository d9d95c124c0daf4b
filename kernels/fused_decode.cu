// SPDX-License-Identifier: Apache-2.0
// The fused decode kernels: one plan per launch, or a batch of plans per launch. Both run the
// tile body of kernels/fused_block.hpp, which the host executor runs too; this file only maps
// the block body onto CUDA's threads, barriers and shared memory.
// The bit width is a run-time value: 4 instantiations (one per word type) instead of 124, at the
// price of run-time shifts; per-width specialisation is the first tuning step to measure.
// Untested on GPU hardware so far.
#include "kernels/config.cuh"
#include "kernels/fused_block.hpp"
#include "kernels/fused_decode.cuh"

namespace oc::kernels::detail {
namespace {

// kernels/fused_block.hpp's Block on CUDA: one thread runs its own share of each phase.
struct DeviceBlock {
  __device__ unsigned threads() const { return blockDim.x; }
  template <class F>
  __device__ void each(F&& f) {
    f(threadIdx.x);
  }
  __device__ void sync() { __syncthreads(); }
  __device__ void report(uint32_t* word, uint32_t bits) { atomicOr(word, bits); }
};

template <class T>
__global__ void __launch_bounds__(kThreadsPerBlock) fused_decode_kernel(const FusedParams p) {
  __shared__ T tile[format::encodings::kFastLanesBlock];
  DeviceBlock b;
  fused_decode_grid(p, blockIdx.x, gridDim.x, b, tile);
}

__global__ void __launch_bounds__(kThreadsPerBlock)
    fused_batch_kernel(const FusedBatchParams batch) {
  __shared__ uint64_t tile[format::encodings::kFastLanesBlock];
  DeviceBlock b;
  fused_decode_batch_grid(batch, blockIdx.x, gridDim.x, b, tile);
}

dim3 grid_for(uint64_t tiles) {
  return dim3(static_cast<unsigned>(tiles < kMaxGridBlocks ? tiles : kMaxGridBlocks));
}

}  // namespace

cudaError_t launch_fused_decode(const FusedParams& params, cudaStream_t stream) {
  if (params.len == 0) return cudaSuccess;
  const dim3 grid = grid_for(params.tiles());
  switch (params.packed_bytes) {
    case 1:
      fused_decode_kernel<uint8_t><<<grid, kThreadsPerBlock, 0, stream>>>(params);
      break;
    case 2:
      fused_decode_kernel<uint16_t><<<grid, kThreadsPerBlock, 0, stream>>>(params);
      break;
    case 4:
      fused_decode_kernel<uint32_t><<<grid, kThreadsPerBlock, 0, stream>>>(params);
      break;
    case 8:
      fused_decode_kernel<uint64_t><<<grid, kThreadsPerBlock, 0, stream>>>(params);
      break;
    default:
      return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

cudaError_t launch_fused_batch(const FusedBatchParams& batch, cudaStream_t stream) {
  if (batch.total_tiles == 0) return cudaSuccess;
  fused_batch_kernel<<<grid_for(batch.total_tiles), kThreadsPerBlock, 0, stream>>>(batch);
  return cudaGetLastError();
}

}  // namespace oc::kernels::detail
