// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief Hands a column decoded on the GPU to other libraries without a copy: as an Arrow C
/// Device array (cuDF, pyarrow.cuda, any Arrow device consumer) or a DLPack tensor (PyTorch,
/// CuPy, JAX). Structures: kernels/device_export_abi.h.
///
/// Both take the `DeviceColumn` over and finish it first: the decode's error word is checked
/// (one host synchronization, none when the column or its batch was finished already), so a
/// corrupt dict code is an error, never a 0 handed on. The device buffers stay alive until the
/// consumer calls `release` (Arrow) or `deleter` (DLPack). The DLPack deleter frees them after
/// the work queued so far on the consumer's stream (the one `__dlpack__(stream=)` named), with
/// no host wait; Arrow's release names no stream, so it waits for the device before freeing.
/// The Arrow export passes a CUDA event recorded after the decode as `sync_event`.
///
/// @note Fixed-width columns only (integers, floats, decimals, dates). Untested on GPU hardware
/// so far.
#pragma once

#include "config/error.hpp"
#include "format/dtype.hpp"
#include "kernels/device_export_abi.h"
#include "kernels/fused_decode.hpp"

namespace oc::kernels {

/// Moves @p column (of type @p dtype, queued on @p stream) into @p out, an Arrow C Device array
/// on CUDA device 0 with one validity and one values buffer.
/// @return `Errc::unsupported` for a type that is not fixed-width; `Errc::corrupt` for a dict
/// code out of range; `Errc::cuda` on a CUDA error.
[[nodiscard]] Result<void> export_arrow_device(DeviceColumn&& column, const format::DTypePtr& dtype,
                                               Stream& stream, ArrowDeviceArray* out);

/// Moves @p column (of type @p dtype, queued on @p stream) into a 1-D DLPack tensor on CUDA
/// device 0, after waiting for the decode. Its deleter frees the memory in the order of
/// @p consumer (the consumer's stream; null: unknown, the free waits for the device).
/// @return the tensor, owned by the caller until its deleter runs; `Errc::unsupported` for
/// nulls (DLPack has no validity), decimals and non-primitive types; `Errc::corrupt` for a dict
/// code out of range.
[[nodiscard]] Result<DLManagedTensor*> export_dlpack(DeviceColumn&& column,
                                                     const format::DTypePtr& dtype, Stream& stream,
                                                     CUstream_st* consumer = nullptr);

}  // namespace oc::kernels
