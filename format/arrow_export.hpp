// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief Zero-copy export of decoded columns and scans through the Arrow C Data and Stream
/// interfaces.
///
/// An exported `ArrowArray` points straight into the `Column`'s buffers and keeps them alive
/// until the consumer calls `release`; nothing is copied.
#pragma once

#include <memory>
#include <vector>

#include "config/error.hpp"
#include "format/arrow_c_abi.h"
#include "format/column.hpp"
#include "format/reader.hpp"

namespace oc::format {

/// Fills @p out with the Arrow schema of @p t named @p name, its strings and binaries in layout
/// @p strings. The caller owns @p out afterwards.
[[nodiscard]] Result<void> export_schema(const DType& t, const std::string& name,
                                         StringLayout strings, ArrowSchema* out);

/// Fills @p out with @p c (zero-copy). The caller owns @p out afterwards.
[[nodiscard]] Result<void> export_array(const ColumnPtr& c, ArrowArray* out);

/// An array to export from buffers of its own: Arrow's buffers in order, the validity bitmap
/// first (an empty `Buffer` exports as NULL) unless the type has none (null), and children.
struct ArrayParts {
  int64_t length = 0, null_count = 0, offset = 0;
  std::vector<Buffer> buffers;
  std::vector<ArrayParts> children;
};

/// Fills @p out with @p parts, whose buffers it keeps alive until the consumer releases it.
void export_parts(ArrayParts parts, ArrowArray* out);

/// Wraps @p scan as an Arrow stream of record batches (struct arrays). The stream owns the scan.
void export_stream(std::unique_ptr<Scan> scan, ArrowArrayStream* out);

}  // namespace oc::format
