// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief The readers of each layout, a file each (format/layout_reader.hpp tells their byte
/// layouts and make_layout_reader picks one by the layout's encoding id). Each checks what its
/// layout node may be (children, segments, metadata, row counts) and builds its children's
/// readers through make_layout_reader, one level deeper.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "config/error.hpp"
#include "format/layout_reader.hpp"

namespace oc::format::layouts {

/// vortex.flat: one segment holding one encoded array.
[[nodiscard]] Result<std::unique_ptr<LayoutReader>> flat(const LayoutPtr& l, const DTypePtr& t,
                                                         SegmentCache& cache, uint32_t depth);
/// vortex.chunked: row chunks of @p t.
[[nodiscard]] Result<std::unique_ptr<LayoutReader>> chunked(const LayoutPtr& l, const DTypePtr& t,
                                                            SegmentCache& cache, uint32_t depth);
/// vortex.struct: every field of @p t.
[[nodiscard]] Result<std::unique_ptr<LayoutReader>> struct_(const LayoutPtr& l, const DTypePtr& t,
                                                            SegmentCache& cache, uint32_t depth);
/// vortex.struct limited to the fields @p which of @p t, read as @p out_t.
[[nodiscard]] Result<std::unique_ptr<LayoutReader>> struct_fields(const LayoutPtr& l,
                                                                  const DTypePtr& t,
                                                                  std::span<const size_t> which,
                                                                  SegmentCache& cache,
                                                                  uint32_t depth, DTypePtr out_t);
/// vortex.dict: [values, codes].
[[nodiscard]] Result<std::unique_ptr<LayoutReader>> dict(const LayoutPtr& l, const DTypePtr& t,
                                                         SegmentCache& cache, uint32_t depth);
/// vortex.zoned and vortex.stats: [data, zones table].
[[nodiscard]] Result<std::unique_ptr<LayoutReader>> zoned(const LayoutPtr& l, const DTypePtr& t,
                                                          SegmentCache& cache, uint32_t depth);

}  // namespace oc::format::layouts
