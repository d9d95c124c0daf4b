// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief `vortex.fsst` on the GPU: one thread per row runs `format::fsst::decompress` (the CPU
/// decoder's own function) into Arrow utf8/binary.
///
/// The uncompressed lengths and the codes offsets (two integer children, len and len + 1 rows)
/// are decoded on the host: their sum gives the exact output size and the Arrow offsets before
/// anything is launched, so no count comes back from the device. The symbol table, the code
/// bytes and the offsets go up in one copy. Result layout (Arrow utf8/binary): len + 1 int32
/// offsets, the bytes, and the validity bitmap (or none). Each row checks its codes range, its
/// codes and that it produced exactly its declared length; a failure sets the error word, which
/// `DeviceFsst::finish` reports as `Errc::corrupt`, as the CPU decoder would.
///
/// Only the current three-buffer form; the legacy form (codes as a binary child) is
/// `Errc::unsupported`. @note Untested on GPU hardware so far.
#pragma once

#include <cstdint>
#include <vector>

#include "config/error.hpp"
#include "format/buffer.hpp"
#include "format/decode.hpp"
#include "kernels/device_memory.hpp"

namespace oc::kernels {

struct FsstPlan {
  uint64_t rows = 0;
  std::vector<uint64_t> symbols;        ///< up to 255 symbols, bytes little-endian
  std::vector<uint8_t> symbol_lengths;  ///< 1..8 each
  format::Buffer codes;                 ///< all rows' code bytes
  std::vector<uint64_t> code_offsets;   ///< rows + 1: row i's codes are [code_offsets[i], [i + 1])
  std::vector<int32_t> offsets;         ///< rows + 1 Arrow offsets from the uncompressed lengths
  format::Buffer validity;              ///< empty: every row valid
  int64_t null_count = 0;
};

/// Plans @p node, a `vortex.fsst` array of @p len rows of type @p dtype.
/// @return `Errc::corrupt` as the CPU decoder for a malformed node; `Errc::unsupported` for the
/// legacy form or more than 2 GiB of output (int32 offsets).
[[nodiscard]] Result<FsstPlan> build_fsst_plan(const format::ArrayView& node,
                                               const format::DTypePtr& dtype, uint64_t len,
                                               format::DecodeContext& ctx);

/// The decoded bytes, on the host, with the device's row function (the reference).
[[nodiscard]] Result<std::vector<uint8_t>> run_fsst_on_host(const FsstPlan& plan);

/// The decoded column on the device; offsets and validity are `plan.offsets` / `plan.validity`.
struct DeviceFsst {
  DeviceBuffer offsets;  ///< rows + 1 int32
  DeviceBuffer data;     ///< offsets[rows] bytes
  DeviceBuffer inputs;   ///< symbols, code bytes, code offsets, error word
  PinnedBuffer staging;
  uint32_t* error = nullptr;

  /// Waits for the decode on @p stream; `Errc::corrupt` when a row failed.
  [[nodiscard]] Result<void> finish(Stream& stream);
};

/// Queues the decode of @p plan on @p stream.
[[nodiscard]] Result<DeviceFsst> decode_fsst_on_device(const FsstPlan& plan, Stream& stream);

}  // namespace oc::kernels
