// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief The stages of a fused decode, as `__host__ __device__` functions: the CUDA kernel
/// (kernels/fused_decode.cu) and the host executor (`run_plan_on_host`, kernels/fused_plan.hpp)
/// call the same code, so the CPU tests check the kernel's arithmetic and indexing.
///
/// A fused decode reads a flat array chain of the shape
///
///     [dict(codes = ...)] [zigzag] [for] (bitpacked [+ patches] | primitive | sequence |
///                                         constant | runend)
///
/// in one pass: each block of 1024 packed positions is unpacked into a tile, patched, then every
/// value runs through up to `kMaxFusedOps` scalar ops (innermost first) in registers and is
/// stored once. Values travel as the low bits of a uint64_t; every op wraps to its output width.
///
/// Byte layout of what a fused decode reads (all little endian):
///   packed:  bitpacked: ceil((offset + len) / 1024) blocks of 128 x W bytes, the FastLanes
///            transposed layout of format/encodings/bitpacked.hpp; primitive: len values of
///            `packed_bytes` each, no offset.
///   patches: `patch_count` ascending packed positions (u64, row + offset) and as many values
///            (u64, low `packed_bytes` bytes used), replacing the unpacked values there.
///   dict:    `values_len` values of `out_bytes` each, indexed by the op's input (the code).
///   validity: an Arrow bitmap (LSB first, bit i = row i), or none when every row is valid.
///   out patches: `out_patch_count` ascending rows and as many values (u64 output bits), written
///            over the decoded output (ALP's exceptions, which live in the float domain).
///   runend:  `run_count` ascending physical run ends (u64, exclusive) and as many values (u64,
///            low `packed_bytes` bytes used); row i is the value of the first run whose end is
///            past run_offset + i.
/// and what it writes: len values of the last op's `out_bytes` (or `packed_bytes`), row 0 first;
/// values travel as 64 bits, so only `widen_decimal`, the last op, writes 16 or 32 bytes.
///
/// @note Untested on GPU hardware so far: the CPU tests run this code through the host executor
/// only; the kernel is checked against it by onecopy-tests-gpu on a CUDA machine.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "format/encodings/alp.hpp"
#include "format/encodings/bitpacked.hpp"

#if defined(__CUDACC__)
#define OC_HOST_DEVICE __host__ __device__
#else
#define OC_HOST_DEVICE
#endif

namespace oc::kernels {

/// Scalar ops applied to each value after the source stage.
enum class FusedOpKind : uint8_t {
  frame_of_reference = 1,  ///< v + reference, wrapping in `out_bytes`
  zigzag = 2,              ///< (v >> 1) ^ -(v & 1), in `out_bytes`
  dict = 3,                ///< values[v]; v out of range sets the error flag and yields 0
  widen_decimal = 4,       ///< sign-extends `in_bytes` to `out_bytes` (16 or 32: i128, i256)
  alp = 5,                 ///< (Float)(int)v x f10 x if10, left to right (format/encodings/alp.hpp)
};

/// Where the values come from.
enum class FusedSource : uint8_t {
  primitive = 1,  ///< a plain array of `packed_bytes`-wide values
  bitpacked = 2,  ///< FastLanes blocks at `bit_width` bits per value
  sequence = 3,   ///< row i = sequence_base + i x sequence_step, wrapping
  constant = 4,   ///< every row = constant_bits
  runend = 5,     ///< runs: `run_ends`, `run_values`
};

/// One scalar op of a fused decode.
struct FusedOp {
  FusedOpKind kind = FusedOpKind::frame_of_reference;
  uint8_t in_bytes = 0;          ///< width of the op's input value
  uint8_t out_bytes = 0;         ///< width of its output value
  bool codes_signed = false;     ///< dict: the codes are a signed type (negative ones are corrupt)
  uint64_t reference = 0;        ///< frame_of_reference: the reference's bits
  const void* values = nullptr;  ///< dict: `values_len` values of `out_bytes` each
  uint64_t values_len = 0;
  uint64_t f10_bits = 0, if10_bits = 0;  ///< alp: 10^f and 10^-e as bits of the float type
};

/// Most scalar ops one fused decode applies (dict over zigzag over FoR, plus one to spare).
inline constexpr unsigned kMaxFusedOps = 4;
/// Error bits a fused decode reports through its flag word.
inline constexpr uint32_t kFusedErrorDictCode = 1;  ///< a dict code was negative or >= values_len

/// Everything one fused decode reads and writes, as raw pointers (device pointers for the
/// kernel, host pointers for the host executor). Plain data: it is the kernel's parameter.
struct FusedParams {
  FusedSource source = FusedSource::primitive;
  uint8_t packed_bytes = 0;  ///< width of the source values: 1, 2, 4 or 8
  uint8_t bit_width = 0;     ///< bitpacked: bits per value, 0..8 x packed_bytes
  uint32_t offset = 0;       ///< bitpacked: packed positions before row 0 (< 1024)
  uint64_t len = 0;          ///< rows written
  const void* packed = nullptr;
  const uint64_t* patch_positions = nullptr;  ///< ascending packed positions
  const uint64_t* patch_values = nullptr;
  uint64_t patch_count = 0;
  const uint64_t* out_patch_rows = nullptr;    ///< ascending rows whose output is replaced (ALP's)
  const uint64_t* out_patch_values = nullptr;  ///< their output bits
  uint64_t out_patch_count = 0;
  /// The output patches cover rows whose dict codes are placeholders (ALP-RD's left parts): a
  /// code out of range there is not an error. False for ALP, whose CPU decoder checks every code.
  bool out_patches_cover_codes = false;
  uint64_t sequence_base = 0, sequence_step = 0;  ///< sequence
  uint64_t constant_bits = 0;                     ///< constant
  const uint64_t* run_ends = nullptr;             ///< runend: ascending physical ends
  const uint64_t* run_values = nullptr;
  uint64_t run_count = 0;
  uint64_t run_offset = 0;  ///< runend: physical row of row 0
  uint32_t op_count = 0;
  FusedOp ops[kMaxFusedOps] = {};
  const uint8_t* validity = nullptr;  ///< Arrow bitmap of the rows (bit i = row i); null: all valid
  void* out = nullptr;                ///< len values of `out_bytes()`
  uint32_t* error = nullptr;          ///< OR-ed with kFusedError* bits; may be null on the host

  /// Width of the values written.
  [[nodiscard]] OC_HOST_DEVICE unsigned out_bytes() const noexcept {
    return op_count == 0 ? packed_bytes : ops[op_count - 1].out_bytes;
  }
  /// Blocks of 1024 packed positions the decode covers.
  [[nodiscard]] OC_HOST_DEVICE uint64_t tiles() const noexcept {
    return (len + offset + format::encodings::kFastLanesBlock - 1) /
           format::encodings::kFastLanesBlock;
  }
};

/// @return @p v truncated to @p bytes bytes.
[[nodiscard]] OC_HOST_DEVICE inline uint64_t fused_mask(uint64_t v, unsigned bytes) noexcept {
  return bytes >= 8 ? v : v & ((uint64_t{1} << (bytes * 8)) - 1);
}

/// @return @p v, a @p bytes-byte two's complement value, sign-extended to 64 bits.
[[nodiscard]] OC_HOST_DEVICE inline uint64_t fused_sign_extend(uint64_t v,
                                                               unsigned bytes) noexcept {
  if (bytes >= 8) return v;
  const uint64_t sign = uint64_t{1} << (bytes * 8 - 1);
  return (fused_mask(v, bytes) ^ sign) - sign;
}

/// @return element @p i of an array of @p bytes-byte values at @p base, zero-extended.
[[nodiscard]] OC_HOST_DEVICE inline uint64_t fused_load(const void* base, uint64_t i,
                                                        unsigned bytes) noexcept {
  switch (bytes) {
    case 1:
      return static_cast<const uint8_t*>(base)[i];
    case 2:
      return static_cast<const uint16_t*>(base)[i];
    case 4:
      return static_cast<const uint32_t*>(base)[i];
    default:
      return static_cast<const uint64_t*>(base)[i];
  }
}

/// Stores the low @p bytes bytes of @p v as element @p i of the array at @p base; 16 and 32
/// bytes (decimals) store @p v sign-extended, little endian.
OC_HOST_DEVICE inline void fused_store(void* base, uint64_t i, unsigned bytes,
                                       uint64_t v) noexcept {
  switch (bytes) {
    case 1:
      static_cast<uint8_t*>(base)[i] = static_cast<uint8_t>(v);
      break;
    case 2:
      static_cast<uint16_t*>(base)[i] = static_cast<uint16_t>(v);
      break;
    case 4:
      static_cast<uint32_t*>(base)[i] = static_cast<uint32_t>(v);
      break;
    case 8:
      static_cast<uint64_t*>(base)[i] = v;
      break;
    default: {
      const unsigned words = bytes / 8;
      uint64_t* w = static_cast<uint64_t*>(base) + i * words;
      w[0] = v;
      const uint64_t sign = (v >> 63) != 0 ? ~uint64_t{0} : 0;
      for (unsigned k = 1; k < words; ++k) w[k] = sign;
      break;
    }
  }
}

/// Extracts row @p row of lane @p lane from one FastLanes block of T words (the value at block
/// position `fastlanes_index(row, lane)`), with a run-time @p width: the bits start at bit
/// row x width of the lane's stream, whose words are block[k x L + lane].
template <class T>
[[nodiscard]] OC_HOST_DEVICE inline T fused_extract(const T* block, unsigned width, unsigned row,
                                                    unsigned lane) noexcept {
  constexpr unsigned kBits = sizeof(T) * 8;
  constexpr unsigned kLanes = format::encodings::kFastLanesBlock / kBits;
  if (width == 0) return 0;
  const unsigned first_bit = row * width;
  const T* word = block + kLanes * (first_bit / kBits) + lane;
  const unsigned shift = first_bit % kBits;
  // Promote before shifting: T may be narrower than int, and a shift by kBits is undefined.
  uint64_t v = static_cast<uint64_t>(word[0]) >> shift;
  if (shift + width > kBits) v |= static_cast<uint64_t>(word[kLanes]) << (kBits - shift);
  return static_cast<T>(
      fused_mask(v & (width >= 64 ? ~uint64_t{0} : (uint64_t{1} << width) - 1), sizeof(T)));
}

/// @return the ALP decode of the integer in the low bits of @p v, as the float's bits.
template <class Float, class Int>
[[nodiscard]] OC_HOST_DEVICE inline uint64_t fused_alp(const FusedOp& op, uint64_t v) noexcept {
  using Bits = std::conditional_t<sizeof(Float) == 4, uint32_t, uint64_t>;
  const auto f10_bits = static_cast<Bits>(op.f10_bits), if10_bits = static_cast<Bits>(op.if10_bits);
  Float f10, if10;
  memcpy(&f10, &f10_bits, sizeof(Float));
  memcpy(&if10, &if10_bits, sizeof(Float));
  const Float decoded =
      format::alp::decode_value<Float>(static_cast<Int>(static_cast<Bits>(v)), f10, if10);
  Bits out;
  memcpy(&out, &decoded, sizeof(Float));
  return out;
}

/// @return whether row @p row is valid (no validity bitmap: every row is).
[[nodiscard]] OC_HOST_DEVICE inline bool fused_valid(const FusedParams& p, uint64_t row) noexcept {
  return p.validity == nullptr || ((p.validity[row >> 3] >> (row & 7)) & 1) != 0;
}

/// @return the first index in the ascending @p positions[0, count) that is >= @p key.
[[nodiscard]] OC_HOST_DEVICE inline uint64_t fused_lower_bound(const uint64_t* positions,
                                                               uint64_t count,
                                                               uint64_t key) noexcept;

/// @return whether an output patch replaces row @p row (a rare path: binary search).
[[nodiscard]] OC_HOST_DEVICE inline bool fused_out_patched(const FusedParams& p,
                                                           uint64_t row) noexcept {
  const uint64_t k = fused_lower_bound(p.out_patch_rows, p.out_patch_count, row);
  return k < p.out_patch_count && p.out_patch_rows[k] == row;
}

/// Applies the ops of @p p to @p v, the value of row @p row, innermost first; ORs kFusedError*
/// bits into @p error. A null row skips dict lookups (its code is arbitrary, its value undefined
/// in Arrow), and so does a row an output patch replaces when `out_patches_cover_codes` says
/// its code is a placeholder (ALP-RD).
[[nodiscard]] OC_HOST_DEVICE inline uint64_t fused_apply_ops(const FusedParams& p, uint64_t v,
                                                             uint64_t row,
                                                             uint32_t& error) noexcept {
  const bool valid = fused_valid(p, row);
  for (uint32_t k = 0; k < p.op_count; ++k) {
    const FusedOp& op = p.ops[k];
    switch (op.kind) {
      case FusedOpKind::frame_of_reference:
        v = fused_mask(v + op.reference, op.out_bytes);
        break;
      case FusedOpKind::zigzag:
        v = fused_mask((v >> 1) ^ (uint64_t{0} - (v & 1)), op.out_bytes);
        break;
      case FusedOpKind::dict: {
        const uint64_t code = op.codes_signed ? fused_sign_extend(v, op.in_bytes) : v;
        if (!valid) {
          v = 0;
        } else if (code >= op.values_len) {  // a negative code wraps to a huge one
          if (!p.out_patches_cover_codes || !fused_out_patched(p, row))
            error |= kFusedErrorDictCode;
          v = 0;
        } else {
          v = fused_load(op.values, code, op.out_bytes);
        }
        break;
      }
      case FusedOpKind::widen_decimal:
        v = fused_sign_extend(v, op.in_bytes);
        break;
      case FusedOpKind::alp:
        v = op.out_bytes == 4 ? fused_alp<float, int32_t>(op, v)
                              : fused_alp<double, int64_t>(op, v);
        break;
    }
  }
  return v;
}

/// @return the first index in the ascending @p positions[0, count) that is >= @p key.
[[nodiscard]] OC_HOST_DEVICE inline uint64_t fused_lower_bound(const uint64_t* positions,
                                                               uint64_t count,
                                                               uint64_t key) noexcept {
  uint64_t lo = 0, hi = count;
  while (lo < hi) {
    const uint64_t mid = lo + (hi - lo) / 2;
    if (positions[mid] < key)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/// @return the first index in the ascending @p ends[0, count) whose value is > @p key.
[[nodiscard]] OC_HOST_DEVICE inline uint64_t fused_upper_bound(const uint64_t* ends, uint64_t count,
                                                               uint64_t key) noexcept {
  uint64_t lo = 0, hi = count;
  while (lo < hi) {
    const uint64_t mid = lo + (hi - lo) / 2;
    if (ends[mid] <= key)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/// @return the source value of row @p row (< len) for every source but bitpacked, which
/// unpacks whole tiles instead.
[[nodiscard]] OC_HOST_DEVICE inline uint64_t fused_source_value(const FusedParams& p,
                                                                uint64_t row) noexcept {
  switch (p.source) {
    case FusedSource::sequence:
      return fused_mask(p.sequence_base + row * p.sequence_step, p.packed_bytes);
    case FusedSource::constant:
      return p.constant_bits;
    case FusedSource::runend: {
      // The planner checked that the runs cover every row, so the run index is in range.
      return p.run_values[fused_upper_bound(p.run_ends, p.run_count, p.run_offset + row)];
    }
    default:
      return fused_load(p.packed, row, p.packed_bytes);
  }
}

}  // namespace oc::kernels
