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

/// Gathers on the host: every pointer of @p p is host memory, the outputs allocated by the
/// caller (`out`: n x width bytes; `out_validity`: (n + 7) / 8 bytes, or null for no bitmap).
/// @return the null rows gathered.
uint64_t gather_on_host(const GatherParams& p);

/// Queues the gather on @p stream: every pointer of @p p is device memory, the outputs
/// allocated by the caller as for `gather_on_host`; `nulls`, when set, must start at 0 and
/// holds the null rows once the stream has passed the gather.
[[nodiscard]] Result<void> gather_on_device(const GatherParams& p, Stream& stream);

/// The null rows a gather of @p p would find, counted on the host from a host bitmap
/// (`validity` and `selection` host memory; the values are not read).
[[nodiscard]] uint64_t gather_null_count(const GatherParams& p);

}  // namespace oc::kernels
