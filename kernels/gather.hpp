// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief The scan's row gather (kernels/gather_stages.hpp) on the host and on device 0: a
/// decoded chunk's window and kept rows into a batch column, values and validity.
///
/// @note The device gather is untested on GPU hardware so far; onecopy-tests-gpu compares it with
/// `gather_on_host`, which the CPU tests run through the device scan's host reference.
#pragma once

#include <cstdint>
#include <vector>

#include "config/error.hpp"
#include "format/buffer.hpp"
#include "kernels/device_memory.hpp"
#include "kernels/gather_stages.hpp"

namespace oc::kernels {

/// A gathered column's buffers.
template <class Buf>
struct Gathered {
  Buf values;
  Buf validity;  ///< empty when the source has no bitmap
};

/// Gathers on the host: @p p's pointers are host memory, `out` and `out_validity` are set here.
/// @return the values and bitmap, with the null count in @p nulls.
[[nodiscard]] Gathered<format::Buffer> gather_on_host(GatherParams p, uint64_t& nulls);

/// Queues the gather on @p stream: @p p's source pointers are device memory, the outputs and
/// the null counter are allocated here. `*nulls_out` is the device counter, valid once the
/// stream has passed the gather.
[[nodiscard]] Result<Gathered<DeviceBuffer>> gather_on_device(GatherParams p, DeviceBuffer& nulls_out, Stream& stream);

}  // namespace oc::kernels
