// SPDX-License-Identifier: Apache-2.0
// The host half of the gather that needs no CUDA: the reference, octet by octet.
#include "kernels/gather.hpp"

namespace oc::kernels {

Gathered<format::Buffer> gather_on_host(GatherParams p, uint64_t& nulls) {
  Gathered<format::Buffer> out;
  out.values = format::Buffer::allocate_array_for_overwrite(p.n, p.width);
  if (p.validity != nullptr) out.validity = format::Buffer::allocate((p.n + 7) / 8);
  p.out = out.values.mutable_data();
  p.out_validity = p.validity != nullptr ? out.validity.mutable_data() : nullptr;
  nulls = 0;
  for (uint64_t k = 0; k < p.octets(); ++k) nulls += gather_octet(p, k);
  return out;
}

}  // namespace oc::kernels
