// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief Opening a Vortex file: trailer, postscript and footer FlatBuffers
/// (format/file_format.hpp).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "config/error.hpp"
#include "format/decode.hpp"
#include "format/dtype.hpp"
#include "format/segment_source.hpp"

namespace oc::format {

/// Where one data segment lives (`SegmentSpec`, 16 bytes: offset u64 @0, length u32 @8,
/// alignment_exponent u8 @12, two reserved bytes that must be 0).
struct SegmentInfo {
  uint64_t offset = 0;
  uint32_t length = 0;
  uint8_t alignment_exponent = 0;
  [[nodiscard]] ByteRange range() const { return {offset, length}; }
};

/// One node of the layout tree. Layouts store no dtype: readers derive it from the parent.
struct LayoutNode {
  std::string encoding;  ///< e.g. "vortex.struct", resolved through layout_specs
  uint64_t row_count = 0;
  std::vector<uint8_t> metadata;
  std::vector<std::shared_ptr<const LayoutNode>> children;
  std::vector<uint32_t> segments;  ///< indices into `Footer::segments`
};
using LayoutPtr = std::shared_ptr<const LayoutNode>;

/// Everything the footer says about a file.
struct Footer {
  uint64_t file_size = 0;
  DTypePtr dtype;
  LayoutPtr layout;
  std::vector<SegmentInfo> segments;
  std::vector<std::string> array_specs;     ///< encoding IDs by index
  std::vector<std::string> layout_specs;    ///< layout IDs by index
  std::vector<ArrayStatsView> field_stats;  ///< one per top-level field (may be empty)
  /// The tail bytes read while opening; segments inside it are served without another read.
  ByteRange tail_range;
  Buffer tail;
  /// Where the footer's FlatBuffers begin (the end of the data): bytes [footer_start, file_size)
  /// are all `footer_from_bytes` needs (what a dataset manifest keeps of each file).
  uint64_t footer_start = 0;
  uint32_t reads_to_open = 0;  ///< 1 or 2; 0 for `footer_from_bytes`
};

/// Reads and validates the footer of @p source with one tail read plus at most one more.
/// Every structural problem is `Errc::corrupt` with a message saying what was wrong.
[[nodiscard]] Result<Footer> read_footer(SegmentSource& source);

/// The footer of @p name, a file of @p file_size bytes whose bytes from @p offset to its end are
/// @p bytes (from a dataset manifest, or a cache): no read. Checked as `read_footer` checks;
/// bytes that do not hold the whole footer are `Errc::corrupt`.
[[nodiscard]] Result<Footer> footer_from_bytes(std::string_view name, uint64_t file_size,
                                               uint64_t offset, Buffer bytes);

}  // namespace oc::format
