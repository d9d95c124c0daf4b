// SPDX-License-Identifier: Apache-2.0
// The host half of the GPU filter that needs no CUDA: the reference selection.
#include "kernels/filter.hpp"

namespace oc::kernels {

Result<std::vector<uint8_t>> select_on_host(const Predicate& p, const void* values,
                                            const uint8_t* validity, uint64_t n) {
  const bool width_ok =
      p.value_bytes == 1 || p.value_bytes == 2 || p.value_bytes == 4 || p.value_bytes == 8;
  OC_EXPECT(width_ok && (p.kind != ValueKind::floating || p.value_bytes >= 4), invalid,
            "no filter for {}-byte {} values", p.value_bytes,
            p.kind == ValueKind::floating ? "float" : "integer");
  std::vector<uint8_t> mask(n);
  for (uint64_t i = 0; i < n; ++i) mask[i] = select_row(p, values, validity, i);
  return mask;
}

}  // namespace oc::kernels
