// SPDX-License-Identifier: Apache-2.0
// Queues the gather kernel; nothing waits.
#include "kernels/gather.cuh"

#include <cuda_runtime.h>

#include "kernels/cuda_check.hpp"
#include "kernels/gather.hpp"

namespace oc::kernels {

Result<void> gather_on_device(const GatherParams& p, Stream& stream) {
  return cuda_check(detail::launch_gather(p, stream.handle()), "gather_kernel");
}

}  // namespace oc::kernels
