// SPDX-License-Identifier: Apache-2.0
// Launch constants shared by every onecopy kernel; nothing else hard-codes a block shape.
#pragma once

#include <cstdint>

namespace oc::kernels {

inline constexpr unsigned kThreadsPerBlock = 256;
inline constexpr uint64_t kMaxGridBlocks = 65535;

}  // namespace oc::kernels
