// SPDX-License-Identifier: Apache-2.0
// The host half of the gather that needs no CUDA: the reference, octet by octet.
#include "format/column.hpp"
#include "kernels/gather.hpp"

namespace oc::kernels {

uint64_t gather_on_host(const GatherParams& p) {
  uint64_t nulls = 0;
  for (uint64_t k = 0; k < p.octets(); ++k) nulls += gather_octet(p, k);
  return nulls;
}

uint64_t gather_null_count(const GatherParams& p) {
  if (p.validity == nullptr) return 0;
  // A window without a selection is a run of the bitmap: count it a word at a time.
  if (p.selection == nullptr)
    return static_cast<uint64_t>(format::count_nulls(p.validity, p.first, p.n));
  uint64_t nulls = 0;
  for (uint64_t i = 0; i < p.n; ++i) {
    const uint64_t row = p.first + (p.selection != nullptr ? p.selection[i] : i);
    nulls += ((p.validity[row >> 3] >> (row & 7)) & 1) == 0 ? 1 : 0;
  }
  return nulls;
}

}  // namespace oc::kernels
