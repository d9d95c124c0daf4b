// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief FSST (Fast Static Symbol Table) decompression, shared by the CPU decoder of
/// `vortex.fsst` and GPU kernels.
///
/// An FSST symbol table holds up to 255 symbols of 1 to 8 bytes. Each symbol is stored as a
/// little-endian u64 whose low `length` bytes are the symbol (byte j of the symbol is bits
/// 8j..8j+7). Compressed text is a sequence of one-byte codes:
///
///   code < number of symbols   emit that symbol's bytes
///   code == 255 (escape)       emit the next code byte literally
///   anything else              corrupt
///
/// Every string is compressed on its own, so no escape spans two strings.
/// `decompress` is `__host__ __device__`: the GPU decode (kernels/fsst.cu) runs it per row.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define OC_FSST_HOST_DEVICE __host__ __device__
#else
#define OC_FSST_HOST_DEVICE
#endif

namespace oc::format::fsst {

inline constexpr uint8_t kEscapeCode = 255;
inline constexpr size_t kMaxSymbols = 255;
inline constexpr uint8_t kMaxSymbolLength = 8;

/// Why `decompress` stopped.
enum class DecodeStatus : uint8_t {
  ok,
  unknown_code,     ///< a code at or past the number of symbols (and not the escape)
  dangling_escape,  ///< the input ends right after an escape code
  output_overflow,  ///< the output would exceed its capacity
};

/// @return a short description of @p status for error messages.
[[nodiscard]] constexpr const char* describe(DecodeStatus status) noexcept {
  switch (status) {
    case DecodeStatus::ok:
      return "ok";
    case DecodeStatus::unknown_code:
      return "a code with no symbol";
    case DecodeStatus::dangling_escape:
      return "an escape code at the end";
    case DecodeStatus::output_overflow:
      return "more bytes than declared";
  }
  return "unknown status";
}

/// The outcome of `decompress`: a status and the bytes written before it stopped.
struct DecodeResult {
  DecodeStatus status;
  size_t written;
};

/// Decompresses @p num_codes FSST codes into @p out.
///
/// Pure and allocation-free: it reads only the given ranges and writes only
/// `[out, out + out_writable)`, whatever the codes say, so hostile codes cannot overrun.
///
/// @param symbols         @p num_symbols symbols, each a u64 holding its bytes little-endian
/// @param symbol_lengths  @p num_symbols lengths; each must be in 1..8 (the caller validates
///                        the table once, e.g. when parsing the array)
/// @param num_symbols     at most `kMaxSymbols`
/// @param codes           the compressed bytes of one string, or of many strings back to back
/// @param out_capacity    bytes the output may hold
/// @param out_writable    bytes at @p out that may be written (at least @p out_capacity): with
///                        8 to spare, a symbol is stored as one 8-byte word and the output
///                        advances by its length, the bytes past it being scratch
/// @return `ok` and the decompressed size, or the failure and the bytes written until then.
/// @p out must not overlap the other arrays (they are read through restrict pointers).
[[nodiscard]] OC_FSST_HOST_DEVICE inline DecodeResult decompress(
    const uint64_t* __restrict__ symbols, const uint8_t* __restrict__ symbol_lengths,
    size_t num_symbols, const uint8_t* __restrict__ codes, size_t num_codes,
    uint8_t* __restrict__ out, size_t out_capacity, size_t out_writable = 0) noexcept {
  if (out_writable < out_capacity) out_writable = out_capacity;
  size_t w = 0, i = 0;
  // Where a whole word for every code fits in what may be written (the usual case: the rest of
  // the output lies past this row), symbols and escaped literals are stored without a check per
  // code until an unknown code or a dangling escape, and the capacity is checked once after.
  // Output that overflows it is decoded again by the checked loop, so the result is the same
  // either way.
  if (out_writable >= sizeof(uint64_t) &&
      num_codes <= (out_writable - sizeof(uint64_t)) / sizeof(uint64_t)) {
    while (i < num_codes) {
      const uint8_t code = codes[i];
      if (code < num_symbols) {
        std::memcpy(out + w, &symbols[code], sizeof(uint64_t));  // little-endian hosts only
        w += symbol_lengths[code];
        ++i;
      } else if (code == kEscapeCode && i + 1 < num_codes) {
        out[w++] = codes[i + 1];  // two codes, one byte: within the word reserved per code
        i += 2;
      } else {
        break;  // the checked loop reports it
      }
    }
    if (w > out_capacity) w = i = 0;
  }
  for (; i < num_codes; ++i) {
    const uint8_t code = codes[i];
    if (code == kEscapeCode) {
      if (++i == num_codes) return {DecodeStatus::dangling_escape, w};
      if (w == out_capacity) return {DecodeStatus::output_overflow, w};
      out[w++] = codes[i];
      continue;
    }
    if (code >= num_symbols) return {DecodeStatus::unknown_code, w};
    const uint8_t length = symbol_lengths[code];
    if (out_capacity - w < length) return {DecodeStatus::output_overflow, w};
    const uint64_t symbol = symbols[code];
    if (out_writable - w >= sizeof(uint64_t)) {
      std::memcpy(out + w, &symbol, sizeof(uint64_t));  // little-endian hosts only
      w += length;
      continue;
    }
    for (uint8_t j = 0; j < length; ++j) out[w++] = static_cast<uint8_t>(symbol >> (8 * j));
  }
  return {DecodeStatus::ok, w};
}

}  // namespace oc::format::fsst
