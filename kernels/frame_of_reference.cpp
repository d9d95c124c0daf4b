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
    OC_TRY(
        cuda_check(cudaMemcpy(d, values.data(), bytes, cudaMemcpyHostToDevice), "copy to device"));
    OC_TRY(cuda_check(detail::launch_add_reference<T>(d, values.size(), reference, nullptr),
                      "add_reference_kernel"));
    OC_TRY(cuda_check(cudaMemcpy(values.data(), d, bytes, cudaMemcpyDeviceToHost), "copy to host"));
    return {};
  }();
  cudaFree(d);
  return result;
}

#define OC_INSTANTIATE(T) template Result<void> add_reference_on_device<T>(std::span<T>, T);
OC_FOR_EACH_REFERENCE_TYPE(OC_INSTANTIATE)
#undef OC_INSTANTIATE

}  // namespace oc::kernels
