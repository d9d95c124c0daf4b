// SPDX-License-Identifier: Apache-2.0
#include "format/pcodec/ans.hpp"

#include <bit>

namespace oc::format::pcodec::detail {

std::vector<AnsNode> build_ans_table(uint32_t size_log, std::span<const uint32_t> weights) {
  static constexpr uint32_t kOne[] = {1};
  if (weights.empty()) weights = kOne;
  const uint32_t table_size = uint32_t{1} << size_log;
  const uint32_t mask = table_size - 1;

  // spread_state_symbols: the same walk as the encoder, or every state decodes wrongly.
  uint32_t stride = 3 * table_size / 5;
  if (stride % 2 == 0) ++stride;
  std::vector<uint32_t> state_symbol(table_size, 0);
  uint32_t step = 0;
  for (uint32_t symbol = 0; symbol < weights.size(); ++symbol) {
    for (uint32_t k = 0; k < weights[symbol]; ++k) {
      state_symbol[(stride * step) & mask] = symbol;
      ++step;
    }
  }

  std::vector<uint32_t> x_s(weights.begin(), weights.end());
  std::vector<AnsNode> nodes(table_size);
  const int table_lz = std::countl_zero(table_size);
  for (uint32_t s = 0; s < table_size; ++s) {
    const uint32_t symbol = state_symbol[s];
    const uint32_t x = x_s[symbol]++;
    const auto bits = static_cast<uint32_t>(std::countl_zero(x) - table_lz);
    nodes[s].symbol = symbol;
    nodes[s].bits_to_read = static_cast<uint8_t>(bits);
    nodes[s].next_state_base = static_cast<uint16_t>((x << bits) - table_size);
  }
  return nodes;
}

}  // namespace oc::format::pcodec::detail
