// SPDX-License-Identifier: Apache-2.0
// Allocates the gather's outputs in the stream's order and queues the kernel; nothing waits.
#include <cuda_runtime.h>

#include "config/checked_size.hpp"
#include "kernels/cuda_check.hpp"
#include "kernels/gather.cuh"
#include "kernels/gather.hpp"

namespace oc::kernels {

Result<Gathered<DeviceBuffer>> gather_on_device(GatherParams p, DeviceBuffer& nulls_out, Stream& stream) {
  Gathered<DeviceBuffer> out;
  OC_ASSIGN_OR_RETURN(out.values, DeviceBuffer::allocate(saturating_mul(p.n, p.width), stream));
  if (p.validity != nullptr) {
    OC_ASSIGN_OR_RETURN(out.validity, DeviceBuffer::allocate((p.n + 7) / 8, stream));
  }
  OC_ASSIGN_OR_RETURN(nulls_out, DeviceBuffer::allocate(sizeof(unsigned long long), stream));
  OC_TRY(cuda_check(cudaMemsetAsync(nulls_out.data(), 0, sizeof(unsigned long long), stream.handle()),
                    "clear the null count"));
  p.out = out.values.as<uint8_t>();
  p.out_validity = p.validity != nullptr ? out.validity.as<uint8_t>() : nullptr;
  p.nulls = nulls_out.as<unsigned long long>();
  OC_TRY(cuda_check(detail::launch_gather(p, stream.handle()), "gather_kernel"));
  return out;
}

}  // namespace oc::kernels
