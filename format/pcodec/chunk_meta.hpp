// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief pcodec's chunk meta: the mode, the delta encoding and each latent variable's bins.
///
/// Layout (bit-packed LSB first, no alignment except where noted; `B` is the number type's
/// latent width, 8/16/32/64):
///
///   [4] mode: 0 Classic | 1 IntMult [B] base | 2 FloatMult [B] base (order-preserving float
///       latent) | 3 FloatQuant [8] k | 4 Dict [25] dict_len, zero bits to a byte boundary,
///       dict_len x [B] raw latents
///   delta, format >= 3:
///   [4] 0 None | 1 Consecutive [3] order (1-7) [1] secondary_uses_delta
///       | 2 Lookback [5] window_n_log - 1 [4] state_n_log [1] secondary_uses_delta
///       | 3 Conv1 [5] quantization [64] bias (ordered i64) [5] n_weights - 1
///                 n_weights x [32] weight (ordered i32)
///   delta, format <= 2: [3] order, 0 = None, else Consecutive without secondary delta
///   per latent variable (the Lookback variable, then the primary, then the secondary):
///     [4] ans_size_log (<= 14) [15] n_bins
///     n_bins x ([ans_size_log] weight - 1, [W] lower, [log2(W) + 1] offset_bits (<= W))
///     where W is the variable's latent width: 32 for the lookback and the Dict index,
///     B otherwise
///   zero bits to a byte boundary.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "config/error.hpp"
#include "format/pcodec/pcodec.hpp"

namespace oc::format::pcodec::detail {

inline constexpr uint32_t kMaxAnsSizeLog = 14;         ///< MAX_ANS_BITS
inline constexpr uint32_t kMaxConsecutiveOrder = 7;    ///< fits the 3-bit order field
inline constexpr uint32_t kMaxLookbackWindowLog = 24;  ///< pcodec > 1.0.3 rejects larger windows
inline constexpr uint32_t kMaxConvQuantization = 31;
inline constexpr uint32_t kMaxDictLen = (uint32_t{1} << 25) - 1;

enum class ModeKind : uint8_t { classic, int_mult, float_mult, float_quant, dict };
enum class DeltaKind : uint8_t { none, consecutive, lookback, conv1 };

/// @return the latent width in bits of @p n: 8, 16, 32 or 64.
[[nodiscard]] uint32_t latent_bits(Number n);
[[nodiscard]] bool is_float(Number n);
[[nodiscard]] bool is_signed_int(Number n);

struct Bin {
  uint32_t weight = 0;       ///< its share of the tANS table, 1..2^ans_size_log
  uint32_t offset_bits = 0;  ///< bits of the offset added to `lower`, <= the latent width
  uint64_t lower = 0;        ///< the lowest latent of the bin
};

/// One latent variable's bins: an interleaved stream of the page.
struct LatentVarMeta {
  uint32_t bits = 0;  ///< latent width: 8, 16, 32 or 64
  uint32_t ans_size_log = 0;
  std::vector<Bin> bins;
};

struct DeltaMeta {
  DeltaKind kind = DeltaKind::none;
  uint32_t order = 0;  ///< Consecutive: the order; Conv1: the number of weights
  bool secondary_uses_delta = false;
  uint32_t window_n_log = 0;     ///< Lookback
  uint32_t state_n_log = 0;      ///< Lookback
  uint32_t quantization = 0;     ///< Conv1
  int64_t bias = 0;              ///< Conv1
  std::vector<int64_t> weights;  ///< Conv1

  /// @return the latents the page header stores per delta'd variable ("delta state"): the
  ///         order, 2^state_n_log or the number of weights; 0 for None.
  [[nodiscard]] uint32_t state_n() const;
};

struct ChunkMeta {
  FormatVersion version;
  Number number = Number::u32;
  ModeKind mode = ModeKind::classic;
  uint64_t base = 0;           ///< IntMult / FloatMult: the base, as a latent
  uint32_t quant_k = 0;        ///< FloatQuant
  std::vector<uint64_t> dict;  ///< Dict: the values, as latents
  DeltaMeta delta;
  std::optional<LatentVarMeta> lookback;  ///< present for Lookback only
  LatentVarMeta primary;
  std::optional<LatentVarMeta> secondary;  ///< IntMult, FloatMult, FloatQuant
  size_t size_bytes = 0;                   ///< how much of the buffer the meta used

  /// @return whether the secondary latent variable goes through the delta encoding.
  [[nodiscard]] bool secondary_delta() const;
  /// @return e.g. "int_mult(base=7) consecutive(order=2,secondary=0)".
  [[nodiscard]] std::string describe() const;
};

/// Parses and validates a chunk meta the way pco 1.0.1 does (`ChunkMeta::read_from`,
/// `ChunkMeta::new`, `mode_is_valid`, `Spec::from_weights`), plus the window bound of later
/// pcodec releases. Trailing bytes are ignored.
[[nodiscard]] Result<ChunkMeta> parse_chunk_meta(FormatVersion v, Number n,
                                                 std::span<const uint8_t> bytes);

}  // namespace oc::format::pcodec::detail
