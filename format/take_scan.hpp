// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief A take as a scan: the rows of a `TakeRows` selection (format/scan_request.hpp), read
/// by `VortexFile::take` and delivered as batches, so that a take travels and is served as
/// every other scan is (onecopyd's `Scan`, `onecopy_scan`, `onecopy_take`).
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "config/error.hpp"
#include "format/reader.hpp"

namespace oc::format {

/// A scan of rows @p rows of @p file (any order, repeats kept) in @p columns (empty: all),
/// cut into batches of at most @p batch_rows rows (0: one batch). Unknown columns are
/// `not_found` here; the take itself runs at the first `next`, where a row past the end is
/// `invalid` (naming it and its position), so that its columns are decoded where the scan's
/// batches are (in onecopyd, into the client's slabs). A take of no rows yields one empty
/// batch.
[[nodiscard]] Result<std::unique_ptr<Scan>> take_scan(std::shared_ptr<const VortexFile> file,
                                                      std::vector<uint64_t> rows,
                                                      std::vector<std::string> columns,
                                                      uint64_t batch_rows, StringLayout strings);

}  // namespace oc::format
