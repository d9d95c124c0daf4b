// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief Row functions of the string dictionary decode (kernels/string_dict.hpp), shared by
/// the CUDA kernels and the host executor.
#pragma once

#include <cstdint>

#include "kernels/fused_stages.hpp"

namespace oc::kernels {

/// What the length and gather stages read: device pointers for the kernels, host ones for the
/// reference.
struct StringDictParams {
  const void* codes = nullptr;  ///< rows codes of `code_bytes` each
  uint8_t code_bytes = 0;
  bool codes_signed = false;
  const uint8_t* validity = nullptr;  ///< null: every row valid
  uint64_t rows = 0;
  const int64_t* value_offsets = nullptr;  ///< values_len + 1
  uint64_t values_len = 0;
  const uint8_t* value_bytes = nullptr;
  int32_t* offsets = nullptr;  ///< rows + 1; lengths before the scan
  uint8_t* data = nullptr;
  uint32_t* error = nullptr;
};

/// @return the dictionary index of row @p i, or values_len when the row is null or its code
/// is out of range (the latter also sets kFusedErrorDictCode in @p error).
[[nodiscard]] OC_HOST_DEVICE inline uint64_t string_dict_index(const StringDictParams& p,
                                                               uint64_t i,
                                                               uint32_t& error) noexcept {
  if (p.validity != nullptr && ((p.validity[i >> 3] >> (i & 7)) & 1) == 0) return p.values_len;
  const uint64_t raw = fused_load(p.codes, i, p.code_bytes);
  const uint64_t code = p.codes_signed ? fused_sign_extend(raw, p.code_bytes) : raw;
  if (code >= p.values_len) {
    error |= kFusedErrorDictCode;
    return p.values_len;
  }
  return code;
}

/// @return the length of row @p i (0 for null or corrupt rows).
[[nodiscard]] OC_HOST_DEVICE inline int32_t string_dict_length(const StringDictParams& p,
                                                               uint64_t i,
                                                               uint32_t& error) noexcept {
  const uint64_t k = string_dict_index(p, i, error);
  return k == p.values_len ? 0 : static_cast<int32_t>(p.value_offsets[k + 1] - p.value_offsets[k]);
}

/// Copies row @p i's bytes to data + offsets[i] (offsets already scanned).
OC_HOST_DEVICE inline void string_dict_gather(const StringDictParams& p, uint64_t i) noexcept {
  uint32_t ignored = 0;  // the length stage reported it
  const uint64_t k = string_dict_index(p, i, ignored);
  if (k == p.values_len) return;
  const uint8_t* src = p.value_bytes + p.value_offsets[k];
  uint8_t* dst = p.data + p.offsets[i];
  const int64_t n = p.value_offsets[k + 1] - p.value_offsets[k];
  for (int64_t b = 0; b < n; ++b) dst[b] = src[b];
}

}  // namespace oc::kernels
