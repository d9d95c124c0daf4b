// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief `zstd_max_inflated`: the most bytes a buffer of zstd frames can inflate to, so that a
/// size declared beside the frames (an Arrow IPC length prefix, vortex.zstd's
/// `uncompressed_size`) is refused before it is allocated when the frames cannot hold it.
///
/// Facts from RFC 8878 (§3.1.1.2): a frame's content is a sequence of blocks, each a 3-byte
/// header followed by its content, and no block regenerates more than Block_Maximum_Size (the
/// smaller of the window and 128 KiB). A block that regenerates anything carries at least one
/// byte (an RLE block: one byte repeated), so every 4 bytes of input give at most 128 KiB of
/// output: a ratio of 32,768, whatever the dictionary.
#pragma once

#include <cstdint>

namespace oc::format {

/// Bytes @p frame_bytes bytes of zstd frames inflate to at most (saturating at UINT64_MAX).
[[nodiscard]] constexpr uint64_t zstd_max_inflated(uint64_t frame_bytes) noexcept {
  constexpr uint64_t kMaxBlockOutput = uint64_t{128} << 10;
  constexpr uint64_t kMinBlockInput = 4;  // a 3-byte header and one byte of content
  const uint64_t blocks = frame_bytes / kMinBlockInput;
  return blocks > UINT64_MAX / kMaxBlockOutput ? UINT64_MAX : blocks * kMaxBlockOutput;
}

}  // namespace oc::format
