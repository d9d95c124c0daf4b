// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief A device scan (client/device_scan.hpp) as an Arrow C Device stream
/// (ArrowDeviceArrayStream, kernels/device_export_abi.h): the record batches of the plain Arrow
/// stream export (format/arrow_export.hpp), each tagged with the device its buffers live on.
/// A batch is complete when get_next returns it, so `sync_event` is NULL. With a consumer stream,
/// a CUDA batch's release first waits for the work queued on that stream by then, so that its
/// memory is not reused while a consumer's kernel still reads it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "format/reader.hpp"
#include "kernels/device_export_abi.h"

namespace oc::kernels {

/// Moves @p scan into @p out, a device stream on @p device_type / @p device_id: CUDA for a
/// scan into GPU memory, CPU (-1) for its host reference. @p consumer_stream (a cudaStream_t;
/// 0: the whole device; unset: no wait) applies to CUDA batches only.
void export_device_stream(std::unique_ptr<format::Scan> scan, ArrowDeviceType device_type,
                          int64_t device_id, ArrowDeviceArrayStream* out,
                          std::optional<uintptr_t> consumer_stream = std::nullopt);

/// Moves @p inner, a plain stream whose batches' buffers already live on the device (a daemon
/// device scan's, daemon/client.hpp), into @p out, tagged the same way.
void wrap_device_stream(ArrowArrayStream* inner, ArrowDeviceType device_type, int64_t device_id,
                        ArrowDeviceArrayStream* out,
                        std::optional<uintptr_t> consumer_stream = std::nullopt);

}  // namespace oc::kernels
