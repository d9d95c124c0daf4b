// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief The checks of a vortex.fsst array that the CPU decoder and the GPU plan builder share:
/// its symbol table, and its rows' uncompressed lengths (layout in format/encodings/fsst.cpp).
#pragma once

#include <array>
#include <cstdint>
#include <span>

#include "config/error.hpp"
#include "format/buffer.hpp"
#include "format/encodings/fsst.hpp"

namespace oc::format::fsst {

/// A parsed symbol table: up to 255 symbols of 1..8 bytes each.
struct SymbolTable {
  std::array<uint64_t, kMaxSymbols> symbols{};
  std::array<uint8_t, kMaxSymbols> lengths{};
  size_t size = 0;
};

/// Parses the symbols buffer (little-endian u64 each) and the symbol lengths buffer (one byte
/// each); `Errc::corrupt` unless they agree in count, hold at most 255 symbols and every length
/// is 1..8.
[[nodiscard]] Result<SymbolTable> parse_symbol_table(const Buffer& symbols, const Buffer& lengths);

/// @return the sum of @p lengths, the rows' uncompressed byte counts; `Errc::unsupported` once
/// it passes Arrow's 2 GiB of i32 offsets (summed without wrapping, whatever a file claims).
[[nodiscard]] Result<uint64_t> total_row_bytes(std::span<const uint64_t> lengths);

}  // namespace oc::format::fsst
