// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief Rendering decoded rows as CSV or JSON Lines for `onecopy scan`.
#pragma once

#include <ostream>

#include "format/column.hpp"

namespace oc::client {

enum class RowFormat { csv, jsonl };

/// Writes rows [0, batch->length) of a struct batch; @p header writes the CSV header first.
void write_rows(std::ostream& out, const format::Column& batch, RowFormat fmt, bool header);

}  // namespace oc::client
