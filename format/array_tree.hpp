// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief Parsing one flat segment into an `ArrayView` tree.
///
/// Byte layout of a flat segment (one serialized array):
///
///     [pad][buffer 0][pad][buffer 1] ... [pad to 8][ArrayTree FlatBuffer][u32 LE fb_len]
///
/// - The last 4 bytes are the FlatBuffer's length; the FlatBuffer is the `fb_len` bytes before.
/// - `ArrayTree.buffers` describes the data buffers in order from segment offset 0: skip
///   `padding` zero bytes, then take `length` bytes. Padding aligns each buffer's offset
///   *relative to the segment start* to `2^alignment_exponent`.
/// - Buffers are numbered by a depth-first pre-order walk: a node's own buffers, then its
///   children's. `ArrayNode.buffers` holds those global indices.
/// - `ArrayNode.encoding` indexes the footer's `array_specs` (encoding ID strings).
/// - `BufferDesc.compression` must be None; LZ4 buffers are rejected, never misread.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "config/error.hpp"
#include "format/buffer.hpp"
#include "format/decode.hpp"

namespace oc::fb {
struct ArrayStats;
}

namespace oc::format {

/// Copies an `ArrayStats` table (null allowed: all stats absent).
[[nodiscard]] ArrayStatsView stats_from_flatbuffer(const fb::ArrayStats* stats);

/// Parses @p segment (which owns the bytes) into its array tree.
/// @param array_specs the footer's encoding-ID registry.

[[nodiscard]] Result<ArrayView> parse_array_tree(const Buffer& segment,
                                                 std::span<const std::string> array_specs);

}  // namespace oc::format
