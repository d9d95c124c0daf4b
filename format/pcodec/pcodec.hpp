// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief A decoder of pcodec's *wrapped* format (header, chunk meta, page): what `vortex.pco`
/// stores, one header per array, one chunk meta buffer per chunk and one buffer per page.
///
/// Written from pcodec's `docs/format.md` and its Rust decoder (pco 0.4.4, format 3, and pco
/// 1.0.1, format 4.1), and checked bit for bit against the `pcodec` Python package
/// (tests/interop/test_pcodec_oracle.py). Every mode (Classic, IntMult, FloatMult, FloatQuant,
/// Dict), every delta encoding (None, Consecutive 1-7, Lookback, Conv1) and every number type
/// pcodec has (8-, 16-, 32- and 64-bit integers, f16, f32, f64).
///
/// Hostile bytes give `Errc::corrupt` (`unsupported` for a format version newer than 4.x or the
/// yanked 0.0.0 IntMult): every size is checked before it is used, reads never leave the
/// buffers, and allocation is bounded by the input's size or by @p n_values.
///
/// The pieces live next to this header, one concern a file: bit_reader (LSB-first bit reading),
/// chunk_meta (the chunk meta's layout and checks), ans (tANS tables), latents (a page's
/// interleaved bins and offsets), delta (the delta decoders), modes (latents to numbers) and
/// pcodec.cpp (this facade and the page loop).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "config/error.hpp"

namespace oc::format::pcodec {

/// pcodec's number types.
enum class Number : uint8_t { u8, i8, u16, i16, u32, i32, u64, i64, f16, f32, f64 };

/// @return the bytes per value of @p n (1, 2, 4 or 8).
[[nodiscard]] size_t width(Number n);

/// @return "u8", "i64", "f16", ...
[[nodiscard]] std::string_view number_name(Number n);

/// The most values one page may hold: pcodec's MAX_ENTRIES (2^24), the largest chunk it writes.
inline constexpr uint32_t kMaxPageValues = uint32_t{1} << 24;

/// The format version a wrapped header names. Major 3 and older have no minor byte (minor 0).
struct FormatVersion {
  uint8_t major = 0;
  uint8_t minor = 0;
};

/// Parses the wrapped header as Vortex stores it: 1 byte (format 3 and older) or 2 bytes (4.x).
///
/// Layout: [8 bits] major; then, only when major >= 4, [8 bits] minor. Bytes after the header
/// are ignored, as pcodec's `FileDecompressor::new` leaves them to the caller.
/// @return the version; `corrupt` when the header is empty or a 4.x header lacks its minor
///         byte; `unsupported` when the major version is above 4 (pcodec refuses those too).
[[nodiscard]] Result<FormatVersion> parse_wrapped_header(std::span<const uint8_t> header);

namespace detail {
class ChunkImpl;
}  // namespace detail

/// One parsed chunk meta, ready to decode that chunk's pages.
///
/// @note `decode_page` is `const` and keeps no state between calls: pages of one chunk may be
///       decoded in any order and from several threads at once.
class ChunkDecoder {
 public:
  /// Parses one chunk meta.
  /// @param v          the version from `parse_wrapped_header`
  /// @param n          the number type the chunk holds
  /// @param chunk_meta the whole chunk meta buffer. Bytes after the meta are ignored, as
  ///                   pcodec's `FileDecompressor::chunk_decompressor` returns them unread;
  ///                   `meta_size()` says where the meta ended.
  /// @return the decoder, or `corrupt` for malformed metadata (out-of-range bins, weights that do
  ///         not sum to the tANS table size, a mode invalid for @p n, a truncated buffer...).
  [[nodiscard]] static Result<ChunkDecoder> parse(FormatVersion v, Number n,
                                                  std::span<const uint8_t> chunk_meta);

  /// Decodes one page of @p n_values values.
  /// @param page     the page buffer (bytes after the page's last batch are ignored, as pcodec
  ///                 does)
  /// @param n_values the page's value count, stored by the wrapping format (Vortex's
  ///                 `PcoPageInfo.n_values`: valid values only); at most `kMaxPageValues`
  /// @param out      n_values * width(number()) bytes, written as native little-endian values;
  ///                 no alignment needed. Unspecified contents on error.
  /// @return ok, or `corrupt`: truncated page, nonzero padding bits, a lookback outside its
  ///         window, a dict index past the dict, bins missing for latents the page needs...
  [[nodiscard]] Result<void> decode_page(std::span<const uint8_t> page, uint32_t n_values,
                                         uint8_t* out) const;

  /// @return the number type given to `parse`.
  [[nodiscard]] Number number() const;
  /// @return the bytes the chunk meta occupied (a prefix of the buffer given to `parse`).
  [[nodiscard]] size_t meta_size() const;
  /// @return the chunk's mode and delta encoding in words, such as
  ///         "int_mult(base=7) consecutive(order=2,secondary=0)": for logs and tests.
  [[nodiscard]] std::string describe() const;

  ChunkDecoder(ChunkDecoder&&) noexcept;
  ChunkDecoder& operator=(ChunkDecoder&&) noexcept;
  ChunkDecoder(const ChunkDecoder&) = delete;
  ChunkDecoder& operator=(const ChunkDecoder&) = delete;
  ~ChunkDecoder();

 private:
  explicit ChunkDecoder(std::unique_ptr<detail::ChunkImpl> impl);
  std::unique_ptr<detail::ChunkImpl> impl_;
};

}  // namespace oc::format::pcodec
