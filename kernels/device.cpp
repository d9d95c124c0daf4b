// SPDX-License-Identifier: Apache-2.0
#include "kernels/device.hpp"

#include <cuda_runtime.h>

namespace oc::kernels {

DeviceInfo probe_devices() {
  DeviceInfo info;
  int count = 0;
  const cudaError_t rc = cudaGetDeviceCount(&count);
  if (rc != cudaSuccess) {
    info.why_none = std::string(cudaGetErrorName(rc)) + ": " + cudaGetErrorString(rc);
    cudaGetLastError();  // clear the sticky error so later probes start clean
    return info;
  }
  info.count = count;
  if (count == 0) {
    info.why_none = "the CUDA runtime reports no devices";
    return info;
  }
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess) {
    info.name = prop.name;
    info.compute_major = prop.major;
    info.compute_minor = prop.minor;
  }
  int current = 0;
  const bool restore = cudaGetDevice(&current) == cudaSuccess;
  for (int d = 0; d < count; ++d) {
    size_t free_bytes = 0, total_bytes = 0;
    if (cudaSetDevice(d) != cudaSuccess ||
        cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) {
      cudaGetLastError();  // a device we cannot read counts with no memory
      continue;
    }
    info.memory_total_bytes += total_bytes;
    info.memory_used_bytes += total_bytes - free_bytes;
  }
  if (restore) cudaSetDevice(current);
  return info;
}

bool built_with_cuda() noexcept { return true; }

}  // namespace oc::kernels
