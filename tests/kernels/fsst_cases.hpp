// SPDX-License-Identifier: Apache-2.0
// FSST arrays for the GPU FSST decode, shared by its CPU and GPU tests.
#pragma once

#include "format/proto/fsst.pb.h"
#include "tests/kernels/string_dict_cases.hpp"

namespace oc::test {

/// Symbols "ab" (code 0), "hello" (code 1), "x" (code 2) and "12345678" (code 3).
inline const std::vector<uint64_t> kFsstSymbols = {0x6261, 0x6f6c6c6568, 0x78, 0x3837363534333231};
inline const std::vector<uint8_t> kFsstLengths = {2, 5, 1, 8};

/// A vortex.fsst node of @p len random rows (symbols and escaped literals, empty rows too);
/// with @p nulls, about one row in four is null (empty codes, length 0).
inline ArrayView fsst_rows(uint64_t len, bool nulls, std::mt19937_64& rng) {
  std::vector<uint8_t> codes;
  std::vector<uint32_t> offsets = {0}, lengths;
  auto valid = random_validity(len, nulls ? 4 : 1'000'000'000, rng);
  for (uint64_t i = 0; i < len; ++i) {
    uint32_t n = 0;
    const unsigned items = valid[i] ? static_cast<unsigned>(rng() % 12) : 0;
    for (unsigned k = 0; k < items; ++k) {
      const unsigned pick = static_cast<unsigned>(rng() % 5);
      if (pick == 4) {
        codes.push_back(255);
        codes.push_back(static_cast<uint8_t>(rng()));
        n += 1;
      } else {
        codes.push_back(static_cast<uint8_t>(pick));
        n += kFsstLengths[pick];
      }
    }
    offsets.push_back(static_cast<uint32_t>(codes.size()));
    lengths.push_back(n);
  }
  pb::FsstMetadata m;
  m.set_uncompressed_lengths_ptype(static_cast<uint32_t>(PType::u32));
  m.set_codes_offsets_ptype(static_cast<uint32_t>(PType::u32));
  std::vector<ArrayView> children = {primitive_node(lengths), primitive_node(offsets)};
  if (nulls) children.push_back(bool_node(valid));
  return node("vortex.fsst", m.SerializeAsString(),
              {buffer_of(kFsstSymbols), buffer_of(kFsstLengths), buffer_of(codes)},
              std::move(children));
}

}  // namespace oc::test
