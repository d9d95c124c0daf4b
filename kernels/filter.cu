// SPDX-License-Identifier: Apache-2.0
// The selection kernel (grid-stride, one flag per row) and the CUB compaction, instantiated for
// the four value widths. Untested on GPU hardware so far.
#include <cub/device/device_select.cuh>

#include "kernels/config.cuh"
#include "kernels/filter.cuh"

namespace oc::kernels::detail {
namespace {

__global__ void __launch_bounds__(kThreadsPerBlock)
    select_kernel(const Predicate p, const void* values, const uint8_t* validity, uint64_t n,
                  uint8_t* mask) {
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  for (uint64_t i = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; i < n;
       i += stride) {
    mask[i] = select_row(p, values, validity, i);
  }
}

template <class T>
cudaError_t compact(void* scratch, size_t& scratch_bytes, const void* values, const uint8_t* mask,
                    void* out, uint64_t* selected, uint64_t n, cudaStream_t stream) {
  return cub::DeviceSelect::Flagged(scratch, scratch_bytes, static_cast<const T*>(values), mask,
                                    static_cast<T*>(out), selected, static_cast<int64_t>(n),
                                    stream);
}

}  // namespace

cudaError_t launch_select(const Predicate& p, const void* values, const uint8_t* validity,
                          uint64_t n, uint8_t* mask, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  uint64_t blocks = (n + kThreadsPerBlock - 1) / kThreadsPerBlock;
  if (blocks > kMaxGridBlocks) blocks = kMaxGridBlocks;
  select_kernel<<<static_cast<unsigned>(blocks), kThreadsPerBlock, 0, stream>>>(p, values, validity,
                                                                                n, mask);
  return cudaGetLastError();
}

cudaError_t compact_flagged(unsigned value_bytes, void* scratch, size_t& scratch_bytes,
                            const void* values, const uint8_t* mask, void* out, uint64_t* selected,
                            uint64_t n, cudaStream_t stream) {
  switch (value_bytes) {
    case 1:
      return compact<uint8_t>(scratch, scratch_bytes, values, mask, out, selected, n, stream);
    case 2:
      return compact<uint16_t>(scratch, scratch_bytes, values, mask, out, selected, n, stream);
    case 4:
      return compact<uint32_t>(scratch, scratch_bytes, values, mask, out, selected, n, stream);
    case 8:
      return compact<uint64_t>(scratch, scratch_bytes, values, mask, out, selected, n, stream);
    default:
      return cudaErrorInvalidValue;
  }
}

}  // namespace oc::kernels::detail
