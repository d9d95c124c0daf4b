// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief Executes a `FusedPlan` (kernels/fused_plan.hpp) on device 0 in one kernel launch.
///
/// The decode stages the plan's inputs (packed data, patches, dictionaries) through one pinned
/// buffer, copies them to one device allocation with a single asynchronous copy, launches the
/// fused kernel (kernels/fused_decode.cu) and leaves the values in device memory. Nothing waits
/// until `DeviceColumn::finish`, which synchronizes once and reports corrupt dict codes found on
/// the device: no device-to-host round trip per stage or per chunk.
///
/// @note Untested on GPU hardware so far: onecopy-tests-gpu compares it with `run_plan_on_host`
/// and the CPU decoders, and SKIPs (exit 77) on machines without a CUDA device.
#pragma once

#include <cstdint>

#include "config/error.hpp"
#include "format/buffer.hpp"
#include "kernels/device_memory.hpp"
#include "kernels/fused_plan.hpp"

namespace oc::kernels {

/// A column decoding (or decoded) on the device, with the inputs the launch still reads.
struct DeviceColumn {
  DeviceBuffer values;   ///< `rows` values of `value_bytes` each, row 0 first
  uint64_t rows = 0;
  unsigned value_bytes = 0;
  DeviceBuffer inputs;   ///< staged inputs and the error word; freed after the kernel, in stream order
  PinnedBuffer staging;  ///< host side of the input copy; must live until the copy completed
  uint32_t* error = nullptr;  ///< device address of the error word, inside `inputs`
  /// The launch's parameters, bound to `inputs` and `values`: a benchmark re-launches with them
  /// (detail::launch_fused_decode) while the column is unfinished.
  FusedParams params;

  /// Waits for the decode on @p stream (the one it was queued on) and checks the error word.
  /// @return `Errc::corrupt` when a dict code was out of range; `Errc::cuda` on a CUDA failure.
  [[nodiscard]] Result<void> finish(Stream& stream);
};

/// Queues the decode of @p plan on @p stream and returns at once.
/// @return the column; call `finish` before reading `values` from the host or freeing the plan.
[[nodiscard]] Result<DeviceColumn> decode_on_device(const FusedPlan& plan, Stream& stream);

/// Decodes @p plan on the device and copies the values back: the tests' entry point.
/// @return `plan.output_bytes()` bytes, equal to `run_plan_on_host(plan)`.
[[nodiscard]] Result<format::Buffer> decode_on_device_to_host(const FusedPlan& plan);

}  // namespace oc::kernels
