// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief Scan internals shared by `VortexFile::scan` and `VortexFile::take`: reading some
/// top-level columns of a file as record batches.
#pragma once

#include <memory>
#include <span>
#include <string>

#include "config/error.hpp"
#include "format/layout_reader.hpp"
#include "format/reader.hpp"

namespace oc::format {

/// A reader over some top-level columns of a file, and the step that turns what it reads into
/// a record batch (a non-nullable struct column).
struct TableReader {
  std::unique_ptr<LayoutReader> reader;
  DTypePtr batch_type;  ///< the record batch's struct type
  bool wrap = false;    ///< the file's root is not a struct: it reads as one column "value"

  /// Turns a column read by `reader` into a batch: wraps a non-struct root, and pushes the
  /// nulls of a nullable root struct down into its fields.
  [[nodiscard]] Result<ColumnPtr> to_batch(ColumnPtr col) const;
};

/// Opens a reader over @p columns (empty: all) of @p file; `Errc::not_found` for an unknown one.
[[nodiscard]] Result<TableReader> open_table_reader(const VortexFile& file,
                                                    std::span<const std::string> columns,
                                                    SegmentCache& cache);

/// The scan behind `VortexFile::scan`.
[[nodiscard]] Result<std::unique_ptr<Scan>> start_file_scan(std::shared_ptr<const VortexFile> file,
                                                            const ScanOptions& options);

}  // namespace oc::format
