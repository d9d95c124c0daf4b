// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief The row function of the GPU FSST decode (kernels/fsst.hpp), shared by the kernel and
/// the host reference.
#pragma once

#include <cstdint>

#include "format/encodings/fsst.hpp"
#include "kernels/fused_stages.hpp"

namespace oc::kernels {

struct FsstParams {
  const uint64_t* symbols = nullptr;
  const uint8_t* symbol_lengths = nullptr;
  uint32_t num_symbols = 0;
  const uint8_t* codes = nullptr;
  uint64_t codes_size = 0;
  const uint64_t* code_offsets = nullptr;  ///< rows + 1
  const int32_t* offsets = nullptr;        ///< rows + 1, output
  uint8_t* data = nullptr;
  uint64_t rows = 0;
};

/// Decompresses row @p i to data + offsets[i]; never writes past its own row.
/// @return false when its codes range, its codes or its length are corrupt.
[[nodiscard]] OC_HOST_DEVICE inline bool fsst_decode_row(const FsstParams& p, uint64_t i) noexcept {
  const uint64_t begin = p.code_offsets[i], end = p.code_offsets[i + 1];
  if (begin > end || end > p.codes_size) return false;
  const auto capacity = static_cast<size_t>(p.offsets[i + 1] - p.offsets[i]);
  const auto r = format::fsst::decompress(p.symbols, p.symbol_lengths, p.num_symbols,
                                          p.codes + begin, static_cast<size_t>(end - begin),
                                          p.data + p.offsets[i], capacity, capacity);
  return r.status == format::fsst::DecodeStatus::ok && r.written == capacity;
}

}  // namespace oc::kernels
