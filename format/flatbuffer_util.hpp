// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief Verified access to FlatBuffers read from untrusted files.
#pragma once

#include <flatbuffers/flatbuffers.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <span>

#include "config/defaults.hpp"
#include "config/error.hpp"

namespace oc::format {

/// Bytes copied to 8-aligned storage. Vortex writes its footer FlatBuffers back to back without
/// padding, so their offsets in the file may be unaligned; FlatBuffers needs aligned scalars.
class AlignedBytes {
 public:
  AlignedBytes() = default;
  explicit AlignedBytes(std::span<const uint8_t> src)
      : words_(new uint64_t[(src.size() + 7) / 8 + 1]), size_(src.size()) {
    if (!src.empty()) std::memcpy(words_.get(), src.data(), src.size());
  }
  [[nodiscard]] std::span<const uint8_t> span() const {
    return {reinterpret_cast<const uint8_t*>(words_.get()), size_};
  }

 private:
  std::shared_ptr<uint64_t[]> words_;
  size_t size_ = 0;
};

/// Verifies @p bytes as a FlatBuffer whose root is @p T and returns the root.
/// @note @p bytes must be 8-aligned (see `AlignedBytes`) and outlive the returned pointer.
template <class T>
[[nodiscard]] Result<const T*> verified_root(std::span<const uint8_t> bytes, const char* what) {
  OC_EXPECT(bytes.size() >= 8, corrupt, "{} flatbuffer is {} bytes", what, bytes.size());
  // Depth and table limits bound the work a hostile footer can cause. A level of dtype nesting
  // is two tables (DType, then its Struct_ or List), so the verifier's depth follows
  // max_array_depth: raising the knob admits deeper files everywhere it is read.
  flatbuffers::Verifier::Options opts;
  opts.max_depth = 2 * defaults().max_array_depth + 8;
  opts.max_tables = 10'000'000;
  flatbuffers::Verifier v(bytes.data(), bytes.size(), opts);
  OC_EXPECT(v.VerifyBuffer<T>(nullptr), corrupt,
            "{} flatbuffer failed verification (malformed, or nested deeper than {} tables; "
            "see max_array_depth)",
            what, opts.max_depth);
  return flatbuffers::GetRoot<T>(bytes.data());
}

}  // namespace oc::format
