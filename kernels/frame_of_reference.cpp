// SPDX-License-Identifier: Apache-2.0
#include "kernels/frame_of_reference.hpp"

#include "kernels/cuda_check.hpp"
#include "kernels/frame_of_reference.cuh"

namespace oc::kernels {

template <class T>
Result<void> add_reference_on_device(std::span<T> values, T reference) {
  if (values.empty()) return {};
  const size_t bytes = values.size_bytes();
  T* d = nullptr;
  OC_TRY(cuda_check(cudaMalloc(&d, bytes), "cudaMalloc"));
  auto result = [&]() -> Result<void> {
    OC_TRY(cuda_check(cudaMemcpy(d, values.data(), bytes, cudaMemcpyHostToDevice), "copy to device"));
    OC_TRY(cuda_check(detail::launch_add_reference<T>(d, values.size(), reference, nullptr), "add_reference_kernel"));
    OC_TRY(cuda_check(cudaMemcpy(values.data(), d, bytes, cudaMemcpyDeviceToHost), "copy to host"));
    return {};
  }();
  cudaFree(d);
  return result;
}

template Result<void> add_reference_on_device<int8_t>(std::span<int8_t>, int8_t);
template Result<void> add_reference_on_device<int16_t>(std::span<int16_t>, int16_t);
template Result<void> add_reference_on_device<int32_t>(std::span<int32_t>, int32_t);
template Result<void> add_reference_on_device<int64_t>(std::span<int64_t>, int64_t);
template Result<void> add_reference_on_device<uint8_t>(std::span<uint8_t>, uint8_t);
template Result<void> add_reference_on_device<uint16_t>(std::span<uint16_t>, uint16_t);
template Result<void> add_reference_on_device<uint32_t>(std::span<uint32_t>, uint32_t);
template Result<void> add_reference_on_device<uint64_t>(std::span<uint64_t>, uint64_t);

}  // namespace oc::kernels
