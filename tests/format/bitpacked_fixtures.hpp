// SPDX-License-Identifier: Apache-2.0
// Building fastlanes.bitpacked nodes for tests: a reference packer written from the layout
// description in format/encodings/bitpacked.hpp.
#pragma once

#include <algorithm>
#include <string>
#include <type_traits>
#include <vector>

#include "format/encodings/bitpacked.hpp"
#include "format/proto/bitpacked.pb.h"
#include "tests/format/fixtures.hpp"

namespace oc::test {

/// Reference packer, written bit by bit from the layout description in bitpacked.hpp: the
/// value at block position fastlanes_index(row, lane) occupies bits [row x W, row x W + W) of
/// lane `lane`'s bit stream, whose bit k lives in word (k / B) x L + lane at bit k % B.
template <class T>
std::vector<T> pack_reference(const std::vector<T>& values, unsigned width) {
  constexpr unsigned kBits = sizeof(T) * 8;
  constexpr unsigned kLanes = 1024 / kBits;
  std::vector<T> packed(kLanes * width, 0);
  for (unsigned lane = 0; lane < kLanes; ++lane) {
    for (unsigned row = 0; row < kBits; ++row) {
      const T value = values[format::encodings::fastlanes_index(row, lane)];
      for (unsigned bit = 0; bit < width; ++bit) {
        if (((value >> bit) & 1) == 0) continue;
        const unsigned k = row * width + bit;
        packed[(k / kBits) * kLanes + lane] |= static_cast<T>(T{1} << (k % kBits));
      }
    }
  }
  return packed;
}

/// The PType of the integer type T.
template <class T>
constexpr PType ptype_of() {
  constexpr uint8_t kLog2Size = sizeof(T) == 1 ? 0 : sizeof(T) == 2 ? 1 : sizeof(T) == 4 ? 2 : 3;
  return static_cast<PType>(kLog2Size + (std::is_signed_v<T> ? 4 : 0));
}

template <class T>
std::string bitpacked_meta(unsigned width, unsigned offset) {
  pb::BitPackedMetadata m;
  m.set_bit_width(width);
  m.set_offset(offset);
  return m.SerializeAsString();
}

/// A fastlanes.bitpacked node holding @p values (logical rows) at @p width, after @p offset
/// leading rows of the first block.
template <class T>
ArrayView bitpacked_node(const std::vector<T>& values, unsigned width, unsigned offset) {
  const size_t blocks = (values.size() + offset + 1023) / 1024;
  std::vector<T> padded(blocks * 1024, 0), packed;
  std::copy(values.begin(), values.end(), padded.begin() + offset);
  for (size_t b = 0; b < blocks; ++b) {
    auto block = pack_reference(
        std::vector<T>(padded.begin() + b * 1024, padded.begin() + (b + 1) * 1024), width);
    packed.insert(packed.end(), block.begin(), block.end());
  }
  return node("fastlanes.bitpacked", bitpacked_meta<T>(width, offset), {buffer_of(packed)});
}

}  // namespace oc::test
