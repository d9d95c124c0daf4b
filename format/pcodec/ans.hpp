// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief pcodec's tANS decoding table (pco/src/ans/{spec,decoding}.rs).
///
/// A table of 2^size_log states. The states are dealt to the bins ("symbols") in bin order by
/// `spread_state_symbols`: the k-th state handed out (k = 0, 1, ... over all bins, each bin
/// taking `weight` of them) is (k * stride) mod 2^size_log, with stride = 3/5 of the table size
/// rounded down, plus one if even. Decoding state s (an index in [0, 2^size_log)) of bin b:
/// the bin's x-th occurrence in the table (x counting from the bin's weight w upwards, so
/// x in [w, 2w)) reads `bits_to_read` = clz(x) - clz(2^size_log) more bits v and moves to
/// state (x << bits_to_read) - 2^size_log + v.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace oc::format::pcodec::detail {

/// One table state, as the decoder needs it.
struct AnsNode {
  uint32_t symbol = 0;           ///< the bin index (0 when there are no bins)
  uint16_t next_state_base = 0;  ///< the next state before adding the bits read
  uint8_t bits_to_read = 0;      ///< bits read to move to the next state
};

/// Builds the decoding table for @p weights, which must sum to 2^size_log (size_log <= 14);
/// no weights stand for a single symbol of weight 1 (size_log 0), as in pcodec.
[[nodiscard]] std::vector<AnsNode> build_ans_table(uint32_t size_log,
                                                   std::span<const uint32_t> weights);

}  // namespace oc::format::pcodec::detail
