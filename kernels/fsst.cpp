// SPDX-License-Identifier: Apache-2.0
// One arena, one copy: symbols, symbol lengths, code offsets, output offsets, code bytes, error
// word, each 8-byte aligned.
#include "kernels/fsst.cuh"

#include <cuda_runtime.h>

#include <cstring>

#include "kernels/cuda_check.hpp"
#include "kernels/fsst.hpp"

namespace oc::kernels {

Result<void> DeviceFsst::finish(Stream& stream) {
  uint32_t host_error = 0;
  if (error != nullptr) {
    OC_TRY(cuda_check(cudaMemcpyAsync(&host_error, error, sizeof(host_error),
                                      cudaMemcpyDeviceToHost, stream.handle()),
                      "copy the error word"));
  }
  OC_TRY(stream.synchronize());
  staging = PinnedBuffer();
  inputs = DeviceBuffer();
  error = nullptr;
  OC_EXPECT(host_error == 0, corrupt, "vortex.fsst rows are corrupt (device decode)");
  return {};
}

Result<DeviceFsst> decode_fsst_on_device(const FsstPlan& plan, Stream& stream) {
  DeviceFsst out;
  auto up8 = [](size_t n) { return (n + 7) / 8 * 8; };
  const size_t symbols_at = 0;
  const size_t lengths_at = symbols_at + up8(plan.symbols.size() * 8);
  const size_t code_offsets_at = lengths_at + up8(plan.symbol_lengths.size());
  const size_t codes_at = code_offsets_at + up8(plan.code_offsets.size() * 8);
  const size_t error_at = codes_at + up8(plan.codes.size());
  const size_t arena = error_at + 8;
  OC_ASSIGN_OR_RETURN(out.staging, PinnedBuffer::allocate(arena));
  uint8_t* h = out.staging.data();
  std::memcpy(h + symbols_at, plan.symbols.data(), plan.symbols.size() * 8);
  std::memcpy(h + lengths_at, plan.symbol_lengths.data(), plan.symbol_lengths.size());
  std::memcpy(h + code_offsets_at, plan.code_offsets.data(), plan.code_offsets.size() * 8);
  if (!plan.codes.empty()) std::memcpy(h + codes_at, plan.codes.data(), plan.codes.size());
  std::memset(h + error_at, 0, 8);
  OC_ASSIGN_OR_RETURN(out.inputs, DeviceBuffer::allocate(arena, stream));
  OC_TRY(cuda_check(
      cudaMemcpyAsync(out.inputs.data(), h, arena, cudaMemcpyHostToDevice, stream.handle()),
      "copy the fsst inputs"));
  OC_ASSIGN_OR_RETURN(out.offsets,
                      DeviceBuffer::allocate(plan.offsets.size() * sizeof(int32_t), stream));
  // The offsets are part of the result: copied from the plan's pageable vector (the driver
  // stages pageable copies before returning, so the plan may go away afterwards).
  OC_TRY(cuda_check(cudaMemcpyAsync(out.offsets.data(), plan.offsets.data(), out.offsets.size(),
                                    cudaMemcpyHostToDevice, stream.handle()),
                    "copy the fsst offsets"));
  OC_ASSIGN_OR_RETURN(out.data,
                      DeviceBuffer::allocate(static_cast<size_t>(plan.offsets.back()), stream));
  uint8_t* d = out.inputs.as<uint8_t>();
  out.error = reinterpret_cast<uint32_t*>(d + error_at);
  FsstParams p;
  p.symbols = reinterpret_cast<const uint64_t*>(d + symbols_at);
  p.symbol_lengths = d + lengths_at;
  p.num_symbols = static_cast<uint32_t>(plan.symbols.size());
  p.codes = d + codes_at;
  p.codes_size = plan.codes.size();
  p.code_offsets = reinterpret_cast<const uint64_t*>(d + code_offsets_at);
  p.offsets = out.offsets.as<int32_t>();
  p.data = out.data.as<uint8_t>();
  p.rows = plan.rows;
  OC_TRY(cuda_check(detail::launch_fsst_decode(p, out.error, stream.handle()), "fsst_kernel"));
  return out;
}

}  // namespace oc::kernels
