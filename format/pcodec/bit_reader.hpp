// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief LSB-first bit reading for pcodec: every pcodec integer is packed little-endian, the
/// first value in the lowest bits of the first byte.
///
/// Two readers:
///  - `SafeBitReader` for the chunk meta and the page header: any position, bits past the end
///    read as 0 and `overran()` tells; pcodec also reads a zero-padded copy and checks the
///    position afterwards, so the two agree on what a truncated buffer decodes to.
///  - `load_u64` / `read_bits_at` for the page body's hot loops, which run over a copy with
///    `kPagePad` zero bytes after the page (pcodec.cpp checks the position after every latent
///    variable's batch, so a batch can never start past the end).
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

namespace oc::format::pcodec::detail {

static_assert(std::endian::native == std::endian::little, "pcodec decoding assumes little endian");

/// @return the 8 bytes at @p p as a little-endian u64 (unaligned).
inline uint64_t load_u64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

/// @return the low @p n bits of @p x (n <= 64).
inline uint64_t low_bits(uint64_t x, uint32_t n) {
  return n >= 64 ? x : (x & ((uint64_t{1} << n) - 1));
}

/// @return @p n bits (n <= 64) starting at bit @p bit_pos of @p buf, which must have at least
///         `bit_pos / 8 + 16` readable bytes.
inline uint64_t read_bits_at(const uint8_t* buf, size_t bit_pos, uint32_t n) {
  const uint8_t* p = buf + (bit_pos >> 3);
  const uint32_t shift = static_cast<uint32_t>(bit_pos & 7);
  uint64_t v = load_u64(p) >> shift;  // 57..64 valid bits
  if (n + shift > 64) v |= load_u64(p + 7) << (56 - shift);
  return low_bits(v, n);
}

/// A bounds-checked reader over a whole buffer; reads past the end yield zero bits.
class SafeBitReader {
 public:
  explicit SafeBitReader(std::span<const uint8_t> bytes) : bytes_(bytes) {}

  /// @return the next @p n bits (n <= 64) as an unsigned integer.
  uint64_t read(uint32_t n) {
    uint64_t v;
    const size_t byte = pos_ >> 3;
    if (byte + 16 <= bytes_.size()) {
      v = read_bits_at(bytes_.data(), pos_, n);
    } else {
      v = 0;
      for (uint32_t i = 0; i < n; ++i) v |= uint64_t{bit(pos_ + i)} << i;
    }
    pos_ += n;
    return v;
  }
  bool read_bool() { return read(1) != 0; }

  /// Skips to the next byte boundary.
  /// @return false when a skipped bit is 1 (pcodec's `drain_empty_byte` calls that corrupt).
  bool drain_empty_byte() {
    bool clean = true;
    while ((pos_ & 7) != 0) {
      if (bit(pos_) != 0) clean = false;
      ++pos_;
    }
    return clean;
  }

  [[nodiscard]] size_t bit_pos() const { return pos_; }
  [[nodiscard]] size_t bit_size() const { return bytes_.size() * 8; }
  /// @return whether reading went past the end of the buffer.
  [[nodiscard]] bool overran() const { return pos_ > bit_size(); }
  /// @return the bits left before the end (0 once overran).
  [[nodiscard]] size_t bits_left() const { return overran() ? 0 : bit_size() - pos_; }

 private:
  [[nodiscard]] uint32_t bit(size_t pos) const {
    const size_t byte = pos >> 3;
    return byte < bytes_.size() ? (bytes_[byte] >> (pos & 7)) & 1u : 0u;
  }

  std::span<const uint8_t> bytes_;
  size_t pos_ = 0;
};

}  // namespace oc::format::pcodec::detail
