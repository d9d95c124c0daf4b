// SPDX-License-Identifier: Apache-2.0
#include "kernels/alprd.cuh"

#include <cuda_runtime.h>

#include "kernels/alprd.hpp"
#include "kernels/cuda_check.hpp"

namespace oc::kernels {

Result<void> DeviceAlprd::finish(Stream& stream) {
  auto l = left.finish(stream);
  auto r = right.finish(stream);
  OC_TRY(l);
  return r;
}

Result<DeviceAlprd> decode_alprd_on_device(const AlprdPlan& plan, Stream& stream) {
  DeviceAlprd out;
  OC_ASSIGN_OR_RETURN(out.left, decode_on_device(plan.left, stream));
  OC_ASSIGN_OR_RETURN(out.right, decode_on_device(plan.right, stream));
  OC_TRY(cuda_check(
      detail::launch_or_combine(out.left.values.as<uint32_t>(), out.right.values.as<uint32_t>(),
                                out.left.values.size(), stream.handle()),
      "ALP-RD combine"));
  return out;
}

}  // namespace oc::kernels
