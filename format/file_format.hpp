// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief The Vortex file container, byte by byte, and its constants that never change.
///
///     offset            size     content
///     0                 4        magic "VTXF"
///     4                 ...      data segments, each zero-padded in front so that
///                                offset % 2^alignment_exponent == 0
///     ...               ...      DType FlatBuffer       (optional: writers may exclude it)
///     ...               ...      Layout FlatBuffer      (required: root of the layout tree)
///     ...               ...      FileStatistics FlatBuffer (optional)
///     ...               ...      Footer FlatBuffer      (required: segment map, registries)
///     EOF-8-ps_len      ps_len   Postscript FlatBuffer  (locates the four above)
///     EOF-8             2        u16 LE format version, 1
///     EOF-6             2        u16 LE ps_len, at most 65527
///     EOF-4             4        magic "VTXF"
///
/// The four trailing FlatBuffers are written back to back without padding, finished without a
/// size prefix or file identifier; each is located by a `PostscriptSegment` (offset, length,
/// alignment exponent 3). Because they may start at unaligned offsets, readers copy them into
/// aligned memory before verification (format/flatbuffer_util.hpp).
///
/// Opening takes one read of the tail (`kInitialReadSize` bytes, or the whole file when smaller)
/// and at most one more when a footer FlatBuffer starts before that window.
#pragma once

#include <array>
#include <cstdint>

namespace oc::format::forever {

inline constexpr std::array<uint8_t, 4> kMagic{'V', 'T', 'X', 'F'};
inline constexpr uint16_t kVersion = 1;
inline constexpr uint64_t kEofSize = 8;
inline constexpr uint64_t kMaxPostscriptSize = 65535 - kEofSize;  // 65527
inline constexpr uint64_t kInitialReadSize = kMaxPostscriptSize + kEofSize;

}  // namespace oc::format::forever
