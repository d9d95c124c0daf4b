// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief CUDA device discovery. "No GPU" and "no driver" are normal states, not errors.
///
/// onecopy links the CUDA runtime statically, so its binaries start on machines without a GPU
/// or driver; there `cudaGetDeviceCount` fails with cudaErrorInsufficientDriver (35) or
/// cudaErrorNoDevice (100) and every decode takes the CPU path.
#pragma once

#include <cstdint>
#include <string>

#include "config/error.hpp"

namespace oc::kernels {

struct DeviceInfo {
  int count = 0;     ///< usable CUDA devices; 0 when none
  std::string name;  ///< device 0's name, when count > 0
  int compute_major = 0, compute_minor = 0;
  std::string why_none;  ///< when count == 0: the runtime's reason, for logs and SKIP lines
  uint64_t memory_total_bytes = 0;  ///< summed over the devices (cudaMemGetInfo)
  uint64_t memory_used_bytes = 0;   ///< by every process, summed over the devices
};

/// Probes the CUDA runtime. Never fails: a missing driver or device gives count == 0.
/// @note Reading the memory figures creates a CUDA context on each device the first time (a
///       few hundred MiB of device memory, once per process); the calling thread's current
///       device is restored.
[[nodiscard]] DeviceInfo probe_devices();

/// @return true when onecopy was built with CUDA kernels (nvcc was found at build time).
[[nodiscard]] bool built_with_cuda() noexcept;

}  // namespace oc::kernels
