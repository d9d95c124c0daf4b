// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief `onecopy inspect`: a file's summary; its dtype, layout tree, encoding trees, segments
/// and zone maps in full with --verbose or --json.
#pragma once

#include <ostream>

#include "config/error.hpp"
#include "format/reader.hpp"

namespace oc::client {

/// Writes a report about @p file to @p out: by default a one-screen summary (size, footer, rows,
/// and a line a column with its type, chunks, bytes, encodings and statistics); with @p verbose
/// the whole layout tree with every segment, encoding tree and zone map; with @p json the whole
/// report as JSON.
[[nodiscard]] Result<void> inspect(const format::VortexFile& file, std::ostream& out, bool json,
                                   bool verbose);

}  // namespace oc::client
