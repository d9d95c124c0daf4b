// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief CUDA device discovery. "No GPU" and "no driver" are normal states, not errors.
///
/// onecopy links the CUDA runtime statically, so its binaries start on machines without a GPU
/// or driver; there `cudaGetDeviceCount` fails with cudaErrorInsufficientDriver (35) or
/// cudaErrorNoDevice (100) and every decode takes the CPU path.
#pragma once

#include <string>

#include "config/error.hpp"

namespace oc::kernels {

struct DeviceInfo {
  int count = 0;           ///< usable CUDA devices; 0 when none
  std::string name;        ///< device 0's name, when count > 0
  int compute_major = 0, compute_minor = 0;
  std::string why_none;    ///< when count == 0: the runtime's reason, for logs and SKIP lines
};

/// Probes the CUDA runtime once. Never fails: a missing driver or device gives count == 0.
[[nodiscard]] DeviceInfo probe_devices();

/// @return true when onecopy was built with CUDA kernels (nvcc was found at build time).
[[nodiscard]] bool built_with_cuda() noexcept;

}  // namespace oc::kernels
