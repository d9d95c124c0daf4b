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

template Result<void> add_reference_on_device<int8_t>(std::span<int8_t>, int8_t);
template Result<void> add_reference_on_device<int16_t>(std::span<int16_t>, int16_t);
template Result<void> add_reference_on_device<int32_t>(std::span<int32_t>, int32_t);
template Result<void> add_reference_on_device<int64_t>(std::span<int64_t>, int64_t);
template Result<void> add_reference_on_device<uint8_t>(std::span<uint8_t>, uint8_t);
template Result<void> add_reference_on_device<uint16_t>(std::span<uint16_t>, uint16_t);
template Result<void> add_reference_on_device<uint32_t>(std::span<uint32_t>, uint32_t);
template Result<void> add_reference_on_device<uint64_t>(std::span<uint64_t>, uint64_t);

}  // namespace oc::kernels
