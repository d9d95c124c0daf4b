// SPDX-License-Identifier: Apache-2.0
#include "kernels/filter.hpp"

#include <cuda_runtime.h>

#include "config/checked_size.hpp"
#include "kernels/cuda_check.hpp"
#include "kernels/filter.cuh"

namespace oc::kernels {

Result<uint64_t> FilteredColumn::count(Stream& stream) {
  uint64_t n = 0;
  if (selected.data() != nullptr) {
    OC_TRY(cuda_check(
        cudaMemcpyAsync(&n, selected.data(), sizeof(n), cudaMemcpyDeviceToHost, stream.handle()),
        "copy the selected count"));
  }
  OC_TRY(stream.synchronize());
  scratch = DeviceBuffer();
  return n;
}

Result<FilteredColumn> filter_on_device(const Predicate& p, const void* values,
                                        const uint8_t* validity, uint64_t n, Stream& stream) {
  // The same checks as the host reference, so both refuse the same predicates.
  OC_TRY(select_on_host(p, nullptr, nullptr, 0));
  FilteredColumn f;
  OC_ASSIGN_OR_RETURN(f.selected, DeviceBuffer::allocate(sizeof(uint64_t), stream));
  OC_TRY(cuda_check(cudaMemsetAsync(f.selected.data(), 0, sizeof(uint64_t), stream.handle()),
                    "clear the count"));
  if (n == 0) return f;
  OC_ASSIGN_OR_RETURN(f.mask, DeviceBuffer::allocate(n, stream));
  OC_ASSIGN_OR_RETURN(f.values, DeviceBuffer::allocate(saturating_mul(n, p.value_bytes), stream));
  OC_TRY(cuda_check(
      detail::launch_select(p, values, validity, n, f.mask.as<uint8_t>(), stream.handle()),
      "select_kernel"));
  size_t scratch_bytes = 0;
  OC_TRY(cuda_check(
      detail::compact_flagged(p.value_bytes, nullptr, scratch_bytes, values, f.mask.as<uint8_t>(),
                              f.values.data(), f.selected.as<uint64_t>(), n, stream.handle()),
      "DeviceSelect::Flagged (size query)"));
  OC_ASSIGN_OR_RETURN(f.scratch, DeviceBuffer::allocate(scratch_bytes, stream));
  OC_TRY(cuda_check(detail::compact_flagged(p.value_bytes, f.scratch.data(), scratch_bytes, values,
                                            f.mask.as<uint8_t>(), f.values.data(),
                                            f.selected.as<uint64_t>(), n, stream.handle()),
                    "DeviceSelect::Flagged"));
  return f;
}

}  // namespace oc::kernels
