// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief One latent variable's stream in a page: tANS-coded bins, then offsets, a batch at a
/// time (pco/src/page_latent_decompressor.rs).
///
/// Page layout (after the page header, which pcodec.cpp reads), per batch of up to 256 values,
/// per latent variable (lookback, primary, secondary):
///
///   for i in 0..k: [bits_to_read of state i % 4] the tANS step of latent i (4 interleaved
///                  states; bins with a single bin or none read nothing here)
///   for i in 0..k: [offset_bits of latent i's bin] its offset
///
/// and latent i = bin.lower + offset (wrapping). k is the batch's count of latents *before*
/// delta decoding, which is smaller than the batch near a page's end (see pcodec.cpp).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "format/pcodec/ans.hpp"
#include "format/pcodec/bit_reader.hpp"
#include "format/pcodec/chunk_meta.hpp"

namespace oc::format::pcodec::detail {

inline constexpr size_t kBatchN = 256;      ///< FULL_BATCH_N
inline constexpr size_t kInterleaving = 4;  ///< ANS_INTERLEAVING

/// A latent variable's chunk-level decoding tables, for latents of type @p L.
template <class L>
struct LatentDecoder {
  /// One tANS state with its bin folded in.
  struct Entry {
    L lower;
    uint16_t next_state_base;
    uint8_t bits_to_read;
    uint8_t offset_bits;
  };

  uint32_t ans_size_log = 0;
  uint32_t n_bins = 0;
  uint32_t max_offset_bits = 0;
  L only_lower = 0;  ///< with at most one bin: its lower (0 with none)
  uint32_t only_offset_bits = 0;
  std::vector<Entry> table;  ///< 2^ans_size_log entries; used with 2 or more bins

  explicit LatentDecoder(const LatentVarMeta& meta) : ans_size_log(meta.ans_size_log) {
    n_bins = static_cast<uint32_t>(meta.bins.size());
    std::vector<uint32_t> weights;
    weights.reserve(n_bins);
    for (const Bin& b : meta.bins) {
      weights.push_back(b.weight);
      if (b.offset_bits > max_offset_bits) max_offset_bits = b.offset_bits;
    }
    if (n_bins >= 1) {
      only_lower = static_cast<L>(meta.bins[0].lower);
      only_offset_bits = meta.bins[0].offset_bits;
    }
    if (n_bins >= 2) {
      const std::vector<AnsNode> nodes = build_ans_table(ans_size_log, weights);
      table.resize(nodes.size());
      for (size_t s = 0; s < nodes.size(); ++s) {
        const Bin& b = meta.bins[nodes[s].symbol];
        table[s] = Entry{static_cast<L>(b.lower), nodes[s].next_state_base, nodes[s].bits_to_read,
                         static_cast<uint8_t>(b.offset_bits)};
      }
    }
  }

  /// Reads @p n <= 256 latents into @p dst from @p buf at bit @p pos (advanced past them),
  /// stepping the four tANS @p states. @p buf must be readable kPagePad bytes past pos / 8.
  void read_batch(const uint8_t* buf, size_t& pos, std::array<uint32_t, 4>& states, L* dst,
                  size_t n) const {
    uint8_t offset_bits[kBatchN];
    if (n_bins >= 2) {
      read_ans(buf, pos, states, dst, offset_bits, n);
      if (max_offset_bits != 0) add_offsets(buf, pos, dst, offset_bits, n);
    } else {
      for (size_t i = 0; i < n; ++i) dst[i] = only_lower;
      if (only_offset_bits != 0) add_constant_offsets(buf, pos, dst, n);
    }
  }

 private:
  void read_ans(const uint8_t* buf, size_t& pos, std::array<uint32_t, 4>& states, L* dst,
                uint8_t* offset_bits, size_t n) const {
    const Entry* t = table.data();
    size_t byte = pos >> 3;
    uint32_t bit = static_cast<uint32_t>(pos & 7);
    uint32_t s0 = states[0], s1 = states[1], s2 = states[2], s3 = states[3];
    size_t i = 0;
    // Four symbols of at most 14 bits each fit one 64-bit load after a refill to < 8 bits.
    for (; i + kInterleaving <= n; i += kInterleaving) {
      byte += bit >> 3;
      bit &= 7;
      const uint64_t word = load_u64(buf + byte);
#define OC_PCO_ANS_STEP(J, S)                                                         \
  {                                                                                   \
    const Entry& e = t[S];                                                            \
    const auto v = static_cast<uint32_t>(word >> bit) & ((1u << e.bits_to_read) - 1); \
    bit += e.bits_to_read;                                                            \
    dst[i + (J)] = e.lower;                                                           \
    offset_bits[i + (J)] = e.offset_bits;                                             \
    S = e.next_state_base + v;                                                        \
  }
      OC_PCO_ANS_STEP(0, s0)
      OC_PCO_ANS_STEP(1, s1)
      OC_PCO_ANS_STEP(2, s2)
      OC_PCO_ANS_STEP(3, s3)
#undef OC_PCO_ANS_STEP
    }
    std::array<uint32_t, 4> s = {s0, s1, s2, s3};
    for (; i < n; ++i) {
      byte += bit >> 3;
      bit &= 7;
      uint32_t& state = s[i % kInterleaving];
      const Entry& e = t[state];
      const auto v =
          static_cast<uint32_t>(load_u64(buf + byte) >> bit) & ((1u << e.bits_to_read) - 1);
      bit += e.bits_to_read;
      dst[i] = e.lower;
      offset_bits[i] = e.offset_bits;
      state = e.next_state_base + v;
    }
    states = s;
    pos = byte * 8 + bit;
  }

  void add_offsets(const uint8_t* buf, size_t& pos, L* dst, const uint8_t* offset_bits,
                   size_t n) const {
    size_t p = pos;
    if (max_offset_bits <= 56) {
      for (size_t i = 0; i < n; ++i) {
        const uint32_t ob = offset_bits[i];
        const uint64_t v = (load_u64(buf + (p >> 3)) >> (p & 7)) & ((uint64_t{1} << ob) - 1);
        dst[i] = static_cast<L>(dst[i] + static_cast<L>(v));
        p += ob;
      }
    } else {
      for (size_t i = 0; i < n; ++i) {
        dst[i] = static_cast<L>(dst[i] + static_cast<L>(read_bits_at(buf, p, offset_bits[i])));
        p += offset_bits[i];
      }
    }
    pos = p;
  }

  void add_constant_offsets(const uint8_t* buf, size_t& pos, L* dst, size_t n) const {
    const uint32_t ob = only_offset_bits;
    size_t p = pos;
    for (size_t i = 0; i < n; ++i, p += ob) {
      dst[i] = static_cast<L>(dst[i] + static_cast<L>(read_bits_at(buf, p, ob)));
    }
    pos = p;
  }
};

}  // namespace oc::format::pcodec::detail
