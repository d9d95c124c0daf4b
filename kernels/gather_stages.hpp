// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief The row gather that turns a decoded chunk into a scan's batch column, as
/// `__host__ __device__` code shared by the gather kernel (kernels/gather.cu) and its host
/// executor (`gather_on_host`): rows [first, first + window) of the chunk, then only those a
/// filter kept.
///
/// Byte layout (little endian):
///   source:    the chunk's values, `width` bytes each (1, 2, 4, 8, 16 or 32), row 0 first;
///   validity:  the chunk's Arrow bitmap (LSB first, bit i = row i), or none;
///   selection: `n` ascending u32 rows relative to `first` (the kept rows), or none: the
///              window's rows, all `n` of them;
///   out:       `n` values of `width` bytes; out_validity: an Arrow bitmap of `n` rows, when
///              asked for; nulls: a u64 the gather adds its null rows to, when asked for.
/// Work unit: one octet of output rows (8 rows, one validity byte), so no two threads write a
/// byte in common and the bitmap needs no atomics.
#pragma once

#include <cstdint>

#include "kernels/fused_stages.hpp"

namespace oc::kernels {

/// What a gather reads and writes, as raw pointers (device or host alike).
struct GatherParams {
  const uint8_t* source = nullptr;
  const uint8_t* validity = nullptr;    ///< null: every source row valid
  const uint32_t* selection = nullptr;  ///< null: rows first .. first + n - 1
  uint64_t first = 0;
  uint64_t n = 0;  ///< output rows
  uint32_t width = 0;
  uint8_t* out = nullptr;
  uint8_t* out_validity = nullptr;      ///< written when set (leave it null when no row is null)
  unsigned long long* nulls = nullptr;  ///< null rows are added here; may be null

  [[nodiscard]] OC_HOST_DEVICE uint64_t octets() const noexcept { return (n + 7) / 8; }
};

/// Gathers output rows 8k .. 8k + 7 (those below n).
/// @return how many of them are null.
[[nodiscard]] OC_HOST_DEVICE inline unsigned gather_octet(const GatherParams& p,
                                                          uint64_t k) noexcept {
  uint8_t bits = 0;
  unsigned nulls = 0;
  for (unsigned j = 0; j < 8; ++j) {
    const uint64_t i = k * 8 + j;
    if (i >= p.n) break;
    const uint64_t row = p.first + (p.selection != nullptr ? p.selection[i] : i);
    const uint8_t* from = p.source + row * p.width;
    uint8_t* to = p.out + i * p.width;
    for (uint32_t b = 0; b < p.width; ++b) to[b] = from[b];
    const bool valid = p.validity == nullptr || ((p.validity[row >> 3] >> (row & 7)) & 1) != 0;
    bits = static_cast<uint8_t>(bits | (valid ? 1u << j : 0u));
    nulls += valid ? 0 : 1;
  }
  if (p.out_validity != nullptr) p.out_validity[k] = bits;
  return nulls;
}

}  // namespace oc::kernels
