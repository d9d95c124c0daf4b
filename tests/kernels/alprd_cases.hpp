// SPDX-License-Identifier: Apache-2.0
// ALP-RD arrays for the GPU ALP-RD decode, shared by its CPU and GPU tests.
#pragma once

#include "format/proto/alprd.pb.h"
#include "tests/kernels/fused_cases.hpp"

namespace oc::test {

/// A vortex.alprd node of @p len rows of f64 (or f32): left parts from a 5-entry dictionary,
/// every 97th row's left part outside it (patched, with a placeholder code out of range), and
/// with @p nulls about one row in five null (its code out of range too). The left codes are
/// bitpacked at 3 bits, the right parts primitive.
inline ArrayView alprd_rows(uint64_t len, bool f32, bool nulls, std::mt19937_64& rng) {
  const uint32_t bits = f32 ? 32 : 64, right_bits = bits - 16;
  const std::vector<uint32_t> dict = {0x3ff0, 0x4000, 0xbff8, 0x7ff8, 0x0000};
  auto valid = random_validity(len, nulls ? 5 : 1'000'000'000, rng);
  std::vector<uint16_t> codes(len);
  std::vector<uint64_t> patch_rows;
  std::vector<uint16_t> patch_values;
  for (uint64_t i = 0; i < len; ++i) {
    if (!valid[i]) {
      codes[i] = 7;
    } else if (i % 97 == 3) {
      codes[i] = 6;
      patch_rows.push_back(i);
      patch_values.push_back(static_cast<uint16_t>(rng()));
    } else {
      codes[i] = static_cast<uint16_t>(rng() % dict.size());
    }
  }
  pb::ALPRDMetadata m;
  m.set_right_bit_width(right_bits);
  m.set_dict_len(static_cast<uint32_t>(dict.size()));
  for (uint32_t d : dict) m.add_dict(d);
  m.set_left_parts_ptype(static_cast<uint32_t>(PType::u16));
  ArrayView left = bitpacked_with_patches<uint16_t>(codes, 3, 0, false, rng);
  if (nulls) left.children.push_back(bool_node(valid));
  std::vector<ArrayView> children = {left};
  const uint64_t mask = (uint64_t{1} << right_bits) - 1;
  if (f32) {
    std::vector<uint32_t> right(len);
    for (auto& r : right) r = static_cast<uint32_t>(rng() & mask);
    children.push_back(primitive_node(right));
  } else {
    std::vector<uint64_t> right(len);
    for (auto& r : right) r = rng() & mask;
    children.push_back(primitive_node(right));
  }
  if (!patch_rows.empty()) {
    m.mutable_patches()->set_len(patch_rows.size());
    m.mutable_patches()->set_indices_ptype(static_cast<uint32_t>(PType::u64));
    children.push_back(primitive_node(patch_rows));
    children.push_back(primitive_node(patch_values));
  }
  return node("vortex.alprd", m.SerializeAsString(), {}, std::move(children));
}

}  // namespace oc::test
