// SPDX-License-Identifier: Apache-2.0
#include <type_traits>

#include "kernels/config.cuh"
#include "kernels/frame_of_reference.cuh"

namespace oc::kernels::detail {
namespace {

template <class T>
__global__ void add_reference_kernel(T* values, uint64_t n, T reference) {
  // Unsigned arithmetic wraps modulo 2^bits, which is exactly the CPU decoder's behaviour.
  using U = std::make_unsigned_t<T>;
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  for (uint64_t i = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; i < n;
       i += stride) {
    values[i] = static_cast<T>(static_cast<U>(values[i]) + static_cast<U>(reference));
  }
}

}  // namespace

template <class T>
cudaError_t launch_add_reference(T* values, uint64_t n, T reference, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  uint64_t blocks = (n + kThreadsPerBlock - 1) / kThreadsPerBlock;
  if (blocks > kMaxGridBlocks) blocks = kMaxGridBlocks;
  add_reference_kernel<T>
      <<<static_cast<unsigned>(blocks), kThreadsPerBlock, 0, stream>>>(values, n, reference);
  return cudaGetLastError();
}

#define OC_INSTANTIATE(T) \
  template cudaError_t launch_add_reference<T>(T*, uint64_t, T, cudaStream_t);
OC_INSTANTIATE(int8_t)
OC_INSTANTIATE(int16_t)
OC_INSTANTIATE(int32_t)
OC_INSTANTIATE(int64_t)
OC_INSTANTIATE(uint8_t)
OC_INSTANTIATE(uint16_t)
OC_INSTANTIATE(uint32_t)
OC_INSTANTIATE(uint64_t)
#undef OC_INSTANTIATE

}  // namespace oc::kernels::detail
