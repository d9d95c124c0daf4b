// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief Hands a column decoded on the GPU to other libraries without a copy: as an Arrow C
/// Device array (cuDF, pyarrow.cuda, any Arrow device consumer) or a DLPack tensor (PyTorch,
/// CuPy, JAX). Structures: kernels/device_export_abi.h.
///
/// Both take the `DeviceColumn` over: its device buffers stay alive until the consumer calls
/// `release` (Arrow) or `deleter` (DLPack), which frees them in the order of their stream.
/// The Arrow export records a CUDA event after the decode and passes it as `sync_event`, so the
/// consumer waits on the device, not the host. A DLPack tensor has no event: the export waits
/// for the decode first (one host synchronization).
///
/// @note The asynchronous Arrow export does not check the decode's error word (a corrupt dict
/// code decodes as 0): call `DeviceColumn::finish` first for untrusted files. Fixed-width
/// columns only (integers, floats, decimals, dates). Untested on GPU hardware so far.
#pragma once

#include "config/error.hpp"
#include "format/dtype.hpp"
#include "kernels/device_export_abi.h"
#include "kernels/fused_decode.hpp"

namespace oc::kernels {

/// Moves @p column (of type @p dtype, queued on @p stream) into @p out, an Arrow C Device array
/// on CUDA device 0 with one validity and one values buffer.
/// @return `Errc::unsupported` for a type that is not fixed-width; `Errc::cuda` on a CUDA error.
[[nodiscard]] Result<void> export_arrow_device(DeviceColumn&& column, const format::DTypePtr& dtype,
                                               Stream& stream, ArrowDeviceArray* out);

/// Moves @p column (of type @p dtype, queued on @p stream) into a 1-D DLPack tensor on CUDA
/// device 0, after waiting for the decode.
/// @return the tensor, owned by the caller until its deleter runs; `Errc::unsupported` for
/// nulls (DLPack has no validity), decimals and non-primitive types.
[[nodiscard]] Result<DLManagedTensor*> export_dlpack(DeviceColumn&& column, const format::DTypePtr& dtype,
                                                     Stream& stream);

}  // namespace oc::kernels
