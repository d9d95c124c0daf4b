// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief pcodec's delta decoders (pco/src/delta/{mod,consecutive,lookback,conv1}.rs).
///
/// Every one first "toggles the center" of the stored deltas (adds MID = 2^(bits-1), wrapping),
/// which the encoder subtracted so small negative deltas become small latents; `format.md`
/// does not say so.
///
/// A page of n values of a delta'd latent variable stores `state_n` latents in its header and
/// n - state_n deltas in its body. Think of the decoded sequence V: V[0..state_n) is the stored
/// state, V[state_n + j] comes from delta j, and the page's latents are V[0..n). Batch b's
/// outputs are V[256b .. 256b + 256), and since each batch reads up to 256 deltas, delta j is
/// read in batch j / 256 at position j % 256: the outputs of a batch never need deltas of a
/// later batch. The last state_n positions of the final batches have no delta ("garbage" to
/// pcodec, which decodes whatever is in its scratch there); their outputs do not depend on them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "format/pcodec/chunk_meta.hpp"

namespace oc::format::pcodec::detail {

template <class L>
inline constexpr L kMid = static_cast<L>(L{1} << (sizeof(L) * 8 - 1));

/// Wrapping arithmetic on latents (u8 and u16 promote to int, whose overflow is undefined).
template <class L>
using Wide = std::conditional_t<(sizeof(L) < 4), uint32_t, L>;
template <class L>
inline L wadd(L a, L b) {
  return static_cast<L>(Wide<L>(a) + Wide<L>(b));
}
template <class L>
inline L wmul(L a, L b) {
  return static_cast<L>(Wide<L>(a) * Wide<L>(b));
}

/// Consecutive of order k: the k moments (state) seed k running sums, highest order first.
/// Decodes @p n latents in place and leaves the moments for the next batch.
template <class L>
void consecutive_decode(L* moments, uint32_t order, L* latents, size_t n) {
  for (size_t i = 0; i < n; ++i) latents[i] = wadd(latents[i], kMid<L>);
  for (uint32_t m = order; m-- > 0;) {
    L moment = moments[m];
    for (size_t i = 0; i < n; ++i) {
      const L delta = latents[i];
      latents[i] = moment;
      moment = wadd(moment, delta);
    }
    moments[m] = moment;
  }
}

/// Conv1: V[i] = delta + max(0, bias + sum_j w[j] * V[i - order + j]) >> quantization, with the
/// sum in the signed type twice the latent width (i16, i32, i64) wrapping as Rust's release
/// build does; chunk_meta.cpp rejects weights and biases that could overflow it anyway.
/// @p state holds the last `order` latents and is left for the next batch; @p latents holds n
/// deltas and receives n latents; @p scratch has room for n + order latents.
template <class L>
void conv1_decode(const DeltaMeta& d, L* state, L* latents, size_t n, L* scratch) {
  using Conv = std::conditional_t<sizeof(L) == 1, int16_t,
                                  std::conditional_t<sizeof(L) == 2, int32_t, int64_t>>;
  using UConv = std::make_unsigned_t<Conv>;
  const size_t order = d.weights.size();
  for (size_t i = 0; i < order; ++i) scratch[i] = state[i];
  for (size_t i = 0; i < n; ++i) scratch[order + i] = wadd(latents[i], kMid<L>);
  // Conv::from_i64 truncates (it never has to, given the overflow check).
  const auto bias = static_cast<UConv>(static_cast<Conv>(d.bias));
  UConv w[32];
  for (size_t j = 0; j < order; ++j) w[j] = static_cast<UConv>(static_cast<Conv>(d.weights[j]));
  for (size_t i = order; i < order + n; ++i) {
    uint64_t s = bias;  // UConv arithmetic widened to 64 bits wraps like Conv once truncated
    for (size_t j = 0; j < order; ++j) {
      s += uint64_t{w[j]} * static_cast<uint64_t>(static_cast<UConv>(scratch[i - order + j]));
    }
    const auto sc = static_cast<Conv>(static_cast<UConv>(s));
    const auto pred = sc < 0 ? L{0} : static_cast<L>(static_cast<UConv>(sc) >> d.quantization);
    scratch[i] = wadd(scratch[i], pred);
  }
  for (size_t i = 0; i < n; ++i) latents[i] = scratch[i];
  for (size_t i = 0; i < order; ++i) state[i] = scratch[n + i];
}

/// Lookback: V[p] = delta + V[p - lookback] (0 before V's start), lookback in [1, window_n].
/// @p v is the page's V (state_n + body entries, state already in place); batch outputs are
/// copied out by the caller. @p first is the batch's first body index.
/// @return false when a lookback is 0 or exceeds the window (corrupt).
template <class L>
bool lookback_decode(std::vector<L>& v, size_t state_n, uint64_t window_n, size_t first,
                     const L* deltas, const uint32_t* lookbacks, size_t n) {
  bool ok = true;
  L* out = v.data() + state_n + first;
  for (size_t i = 0; i < n; ++i) {
    const uint32_t lb = lookbacks[i];
    const size_t p = state_n + first + i;
    L base = 0;
    if (lb == 0 || lb > window_n) {
      ok = false;
    } else if (lb <= p) {
      base = v[p - lb];
    }
    out[i] = wadd(wadd(deltas[i], kMid<L>), base);
  }
  return ok;
}

}  // namespace oc::format::pcodec::detail
