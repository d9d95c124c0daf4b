// SPDX-License-Identifier: Apache-2.0
// Lengths (one thread per row), CUB's exclusive scan, and the gather (one thread per row, byte
// by byte: a first version; a warp per long value is the tuning step). Untested on GPU hardware.
#include <cub/device/device_scan.cuh>

#include "kernels/config.cuh"
#include "kernels/string_dict.cuh"

namespace oc::kernels::detail {
namespace {

unsigned grid_for(uint64_t n) {
  uint64_t blocks = (n + kThreadsPerBlock - 1) / kThreadsPerBlock;
  return static_cast<unsigned>(blocks > kMaxGridBlocks ? kMaxGridBlocks
                                                       : (blocks == 0 ? 1 : blocks));
}

__global__ void __launch_bounds__(kThreadsPerBlock) lengths_kernel(const StringDictParams p) {
  uint32_t error = 0;
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  for (uint64_t i = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; i <= p.rows;
       i += stride) {
    p.offsets[i] = i == p.rows ? 0 : string_dict_length(p, i, error);
  }
  if (error != 0) atomicOr(p.error, error);
}

__global__ void __launch_bounds__(kThreadsPerBlock) gather_kernel(const StringDictParams p) {
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  for (uint64_t i = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; i < p.rows;
       i += stride) {
    string_dict_gather(p, i);
  }
}

}  // namespace

cudaError_t launch_string_lengths(const StringDictParams& p, cudaStream_t stream) {
  lengths_kernel<<<grid_for(p.rows + 1), kThreadsPerBlock, 0, stream>>>(p);
  return cudaGetLastError();
}

cudaError_t exclusive_sum(void* scratch, size_t& scratch_bytes, int32_t* values, uint64_t n,
                          cudaStream_t stream) {
  return cub::DeviceScan::ExclusiveSum(scratch, scratch_bytes, values, values,
                                       static_cast<int64_t>(n), stream);
}

cudaError_t launch_string_gather(const StringDictParams& p, cudaStream_t stream) {
  if (p.rows == 0) return cudaSuccess;
  gather_kernel<<<grid_for(p.rows), kThreadsPerBlock, 0, stream>>>(p);
  return cudaGetLastError();
}

}  // namespace oc::kernels::detail
