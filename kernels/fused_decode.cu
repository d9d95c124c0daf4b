// SPDX-License-Identifier: Apache-2.0
// The fused decode kernel. One block per tile of 1024 packed positions (a FastLanes block):
//   1. unpack: thread k extracts row k / L of lane k % L (L = 1024 / bits of T), so neighbouring
//      threads read neighbouring words of one row (coalesced) and write the tile in shared memory;
//   2. patch: the tile's patches (found by binary search in the sorted positions) overwrite it;
//   3. ops + store: thread k takes tile[k] through the scalar ops in registers and stores it to
//      row tile x 1024 + k - offset, so a warp's stores are contiguous;
//   4. output patches (ALP's) overwrite the tile's rows they name, after a barrier.
// The bit width is a run-time value: 4 instantiations (one per word type) instead of 124, at the
// price of run-time shifts; per-width specialisation is the first tuning step to measure.
// Untested on GPU hardware so far.
#include "kernels/config.cuh"
#include "kernels/fused_decode.cuh"

namespace oc::kernels::detail {
namespace {

using format::encodings::fastlanes_index;
using format::encodings::kFastLanesBlock;
using format::encodings::packed_block_bytes;

template <class T>
__global__ void __launch_bounds__(kThreadsPerBlock) fused_decode_kernel(const FusedParams p) {
  constexpr unsigned kLanes = kFastLanesBlock / (sizeof(T) * 8);
  __shared__ T tile[kFastLanesBlock];
  __shared__ uint64_t patch_range[2];
  const unsigned out_bytes = p.out_bytes();
  const uint64_t words_per_block = packed_block_bytes(p.bit_width) / sizeof(T);
  uint32_t error = 0;
  for (uint64_t t = blockIdx.x; t < p.tiles(); t += gridDim.x) {
    const uint64_t first = t * kFastLanesBlock;
    if (p.source == FusedSource::bitpacked) {
      const T* block = static_cast<const T*>(p.packed) + t * words_per_block;
      for (unsigned k = threadIdx.x; k < kFastLanesBlock; k += blockDim.x) {
        const unsigned lane = k % kLanes, row = k / kLanes;
        tile[fastlanes_index(row, lane)] = fused_extract<T>(block, p.bit_width, row, lane);
      }
    } else {
      for (unsigned k = threadIdx.x; k < kFastLanesBlock && first + k < p.len; k += blockDim.x) {
        tile[k] = static_cast<T>(fused_source_value(p, first + k));
      }
    }
    if (p.patch_count > 0) {  // the same for every thread: the barriers below are uniform
      if (threadIdx.x == 0) {
        patch_range[0] = fused_lower_bound(p.patch_positions, p.patch_count, first);
        patch_range[1] = fused_lower_bound(p.patch_positions, p.patch_count, first + kFastLanesBlock);
      }
      __syncthreads();
      for (uint64_t i = patch_range[0] + threadIdx.x; i < patch_range[1]; i += blockDim.x) {
        tile[p.patch_positions[i] - first] = static_cast<T>(p.patch_values[i]);
      }
    }
    __syncthreads();
    for (unsigned k = threadIdx.x; k < kFastLanesBlock; k += blockDim.x) {
      const uint64_t position = first + k;
      if (position < p.offset || position - p.offset >= p.len) continue;
      fused_store(p.out, position - p.offset, out_bytes, fused_apply_ops(p, tile[k], position - p.offset, error));
    }
    if (p.out_patch_count > 0) {  // output-domain patches overwrite this tile's stored rows
      __syncthreads();
      if (threadIdx.x == 0) {
        const uint64_t row_begin = first > p.offset ? first - p.offset : 0;
        patch_range[0] = fused_lower_bound(p.out_patch_rows, p.out_patch_count, row_begin);
        patch_range[1] = fused_lower_bound(p.out_patch_rows, p.out_patch_count, first + kFastLanesBlock - p.offset);
      }
      __syncthreads();
      for (uint64_t i = patch_range[0] + threadIdx.x; i < patch_range[1]; i += blockDim.x) {
        fused_store(p.out, p.out_patch_rows[i], out_bytes, p.out_patch_values[i]);
      }
    }
    __syncthreads();  // the next tile overwrites `tile` and `patch_range`
  }
  if (error != 0) atomicOr(p.error, error);
}

}  // namespace

cudaError_t launch_fused_decode(const FusedParams& params, cudaStream_t stream) {
  if (params.len == 0) return cudaSuccess;
  uint64_t blocks = params.tiles();
  if (blocks > kMaxGridBlocks) blocks = kMaxGridBlocks;
  const dim3 grid(static_cast<unsigned>(blocks));
  switch (params.packed_bytes) {
    case 1: fused_decode_kernel<uint8_t><<<grid, kThreadsPerBlock, 0, stream>>>(params); break;
    case 2: fused_decode_kernel<uint16_t><<<grid, kThreadsPerBlock, 0, stream>>>(params); break;
    case 4: fused_decode_kernel<uint32_t><<<grid, kThreadsPerBlock, 0, stream>>>(params); break;
    case 8: fused_decode_kernel<uint64_t><<<grid, kThreadsPerBlock, 0, stream>>>(params); break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

}  // namespace oc::kernels::detail
