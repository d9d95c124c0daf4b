// SPDX-License-Identifier: Apache-2.0
// Queues: the codes' fused decode, the dictionary's upload (one pinned copy), lengths, scan,
// gather, all on one stream; `finish` is the only wait.
#include "kernels/string_dict.cuh"

#include <cuda_runtime.h>

#include <cstring>

#include "kernels/cuda_check.hpp"
#include "kernels/string_dict.hpp"

namespace oc::kernels {

Result<void> DeviceStrings::finish(Stream& stream) {
  uint32_t host_error = 0;
  if (error != nullptr) {
    OC_TRY(cuda_check(cudaMemcpyAsync(&host_error, error, sizeof(host_error),
                                      cudaMemcpyDeviceToHost, stream.handle()),
                      "copy the error word"));
  }
  OC_TRY(codes.finish(stream));
  staging = PinnedBuffer();
  inputs = DeviceBuffer();
  scratch = DeviceBuffer();
  error = nullptr;
  OC_EXPECT((host_error & kFusedErrorDictCode) == 0, corrupt,
            "dict code out of range (device decode)");
  return {};
}

Result<DeviceStrings> decode_strings_on_device(const StringDictPlan& plan, Stream& stream) {
  DeviceStrings out;
  const uint64_t n = plan.rows();
  OC_ASSIGN_OR_RETURN(out.codes, decode_on_device(plan.codes, stream));
  // The dictionary: offsets (8-byte aligned first), then the bytes, then the error word.
  const size_t offsets_bytes = plan.value_offsets.size() * sizeof(int64_t);
  const size_t bytes_at = offsets_bytes,
               error_at = (bytes_at + plan.value_bytes.size() + 7) / 8 * 8;
  const size_t arena = error_at + sizeof(uint32_t);
  OC_ASSIGN_OR_RETURN(out.staging, PinnedBuffer::allocate(arena));
  std::memcpy(out.staging.data(), plan.value_offsets.data(), offsets_bytes);
  if (!plan.value_bytes.empty())
    std::memcpy(out.staging.data() + bytes_at, plan.value_bytes.data(), plan.value_bytes.size());
  std::memset(out.staging.data() + error_at, 0, sizeof(uint32_t));
  OC_ASSIGN_OR_RETURN(out.inputs, DeviceBuffer::allocate(arena, stream));
  OC_TRY(cuda_check(cudaMemcpyAsync(out.inputs.data(), out.staging.data(), arena,
                                    cudaMemcpyHostToDevice, stream.handle()),
                    "copy the dictionary to device"));
  OC_ASSIGN_OR_RETURN(out.offsets, DeviceBuffer::allocate((n + 1) * sizeof(int32_t), stream));
  OC_ASSIGN_OR_RETURN(out.data, DeviceBuffer::allocate(plan.data_bytes_bound(), stream));
  uint8_t* base = out.inputs.as<uint8_t>();
  out.error = reinterpret_cast<uint32_t*>(base + error_at);
  StringDictParams p;
  p.codes = out.codes.values.data();
  p.code_bytes = static_cast<uint8_t>(plan.codes.params.out_bytes());
  p.codes_signed = plan.codes_signed;
  p.validity = out.codes.validity.as<uint8_t>();
  p.rows = n;
  p.value_offsets = reinterpret_cast<const int64_t*>(base);
  p.values_len = plan.value_offsets.size() - 1;
  p.value_bytes = base + bytes_at;
  p.offsets = out.offsets.as<int32_t>();
  p.data = out.data.as<uint8_t>();
  p.error = out.error;
  OC_TRY(cuda_check(detail::launch_string_lengths(p, stream.handle()), "string lengths"));
  size_t scratch_bytes = 0;
  OC_TRY(
      cuda_check(detail::exclusive_sum(nullptr, scratch_bytes, p.offsets, n + 1, stream.handle()),
                 "DeviceScan::ExclusiveSum (size query)"));
  OC_ASSIGN_OR_RETURN(out.scratch, DeviceBuffer::allocate(scratch_bytes, stream));
  OC_TRY(cuda_check(
      detail::exclusive_sum(out.scratch.data(), scratch_bytes, p.offsets, n + 1, stream.handle()),
      "DeviceScan::ExclusiveSum"));
  OC_TRY(cuda_check(detail::launch_string_gather(p, stream.handle()), "string gather"));
  return out;
}

}  // namespace oc::kernels
