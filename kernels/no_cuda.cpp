// SPDX-License-Identifier: Apache-2.0
// Builds without nvcc: the same interface, reporting that no device can exist.
#include "kernels/device.hpp"
#include "kernels/frame_of_reference.hpp"

namespace oc::kernels {

DeviceInfo probe_devices() {
  DeviceInfo info;
  info.why_none = "onecopy was built without CUDA (no nvcc at build time)";
  return info;
}

bool built_with_cuda() noexcept { return false; }

template <class T>
Result<void> add_reference_on_device(std::span<T>, T) {
  return OC_ERROR(Errc::cuda, "onecopy was built without CUDA");
}

#define OC_INSTANTIATE(T) template Result<void> add_reference_on_device<T>(std::span<T>, T);
OC_FOR_EACH_REFERENCE_TYPE(OC_INSTANTIATE)
#undef OC_INSTANTIATE

}  // namespace oc::kernels
