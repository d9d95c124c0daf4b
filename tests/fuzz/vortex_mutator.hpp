// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief A structure-aware libFuzzer mutator for Vortex files, for the file targets.
///
/// Byte-level mutation of a whole file almost always breaks its trailer or its FlatBuffers'
/// verification, so the decoders behind them are rarely reached. This mutator finds the file's
/// parts from its own trailer — the postscript, the four footer FlatBuffers and every segment
/// the footer's segment map names (each an array tree: buffers, then the tree's FlatBuffer) —
/// and mutates one part in place, keeping every offset and length of the file valid. Half of
/// those mutations write an interesting integer (0, 1, 2^31 - 1, 2^61, UINT64_MAX, ...) at an
/// aligned position of the part, where FlatBuffers keep counts, lengths, row counts and offsets.
/// One mutation in five is libFuzzer's own over the whole file.
#pragma once

#include <flatbuffers/flatbuffers.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "format/fbs/vortex_file_generated.h"

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

namespace oc::fuzz {

struct Part {
  size_t offset, length;
};

// Verifies a FlatBuffer of type T at [offset, offset + length) of the file, on an aligned copy.
template <class T>
const T* verified(const uint8_t* file, Part p, std::vector<uint8_t>& copy) {
  copy.assign(file + p.offset, file + p.offset + p.length);
  flatbuffers::Verifier v(copy.data(), copy.size());
  return v.VerifyBuffer<T>(nullptr) ? flatbuffers::GetRoot<T>(copy.data()) : nullptr;
}

/// The parts of @p file (of @p size bytes) worth mutating, none of them empty; none at all when
/// its trailer or postscript is not valid.
inline std::vector<Part> parts_of(const uint8_t* file, size_t size) {
  std::vector<Part> parts;
  if (size < 8 || std::memcmp(file + size - 4, "VTXF", 4) != 0) return parts;
  const size_t ps_len = file[size - 6] | size_t{file[size - 5]} << 8;
  if (ps_len + 8 > size) return parts;
  const size_t ps_start = size - 8 - ps_len;
  std::vector<uint8_t> ps_copy, footer_copy;
  const auto* ps = verified<oc::fb::Postscript>(file, {ps_start, ps_len}, ps_copy);
  if (ps == nullptr) return parts;
  parts.push_back({ps_start, ps_len});  // verified, so not empty
  auto add = [&](uint64_t offset, uint64_t length) {
    if (length > 0 && offset <= ps_start && length <= ps_start - offset)
      parts.push_back({offset, length});
  };
  for (const auto* s : {ps->dtype(), ps->layout(), ps->statistics(), ps->footer()}) {
    if (s != nullptr) add(s->offset(), s->length());
  }
  if (ps->footer() == nullptr || parts.back().offset != ps->footer()->offset()) return parts;
  const auto* footer = verified<oc::fb::Footer>(file, parts.back(), footer_copy);
  if (footer == nullptr || footer->segment_specs() == nullptr) return parts;
  // The verifier checks the vector's length, not that its 8-byte structs are aligned.
  if (reinterpret_cast<uintptr_t>(footer->segment_specs()->Data()) % alignof(oc::fb::SegmentSpec) !=
      0)
    return parts;
  for (const auto* s : *footer->segment_specs()) add(s->offset(), s->length());
  return parts;
}

inline size_t mutate_vortex(uint8_t* data, size_t size, size_t max_size, unsigned seed) {
  std::minstd_rand rng(seed);
  const std::vector<Part> parts = parts_of(data, size);
  if (parts.empty() || rng() % 5 == 0) return LLVMFuzzerMutate(data, size, max_size);
  const Part p = parts[rng() % parts.size()];
  if (rng() % 2 == 0 && p.length >= 8) {
    static constexpr uint64_t kInteresting[] = {0,          1,
                                                2,          7,
                                                8,          255,
                                                256,        65535,
                                                65536,      (1ull << 31) - 1,
                                                1ull << 31, (1ull << 32) - 1,
                                                1ull << 32, 1ull << 40,
                                                1ull << 61, 1ull << 62,
                                                ~0ull >> 1, ~0ull};
    const uint64_t v = kInteresting[rng() % std::size(kInteresting)];
    const size_t width = rng() % 2 ? 8 : 4;
    const size_t at = p.offset + (rng() % (p.length - width + 1)) / width * width;
    std::memcpy(data + at, &v, width);
    return size;
  }
  std::vector<uint8_t> copy(data + p.offset, data + p.offset + p.length);
  const size_t n = LLVMFuzzerMutate(copy.data(), copy.size(), copy.size());
  std::memcpy(data + p.offset, copy.data(), n);  // a shorter result keeps the part's old tail
  return size;
}

}  // namespace oc::fuzz

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size,
                                          unsigned seed) {
  return oc::fuzz::mutate_vortex(data, size, max_size, seed);
}
