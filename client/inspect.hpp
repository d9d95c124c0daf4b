// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief `onecopy inspect`: a file's dtype, layout tree, encoding trees, segments and zone maps.
#pragma once

#include <ostream>

#include "config/error.hpp"
#include "format/reader.hpp"

namespace oc::client {

/// Writes a human-readable report (or JSON when @p json) about @p file to @p out.
[[nodiscard]] Result<void> inspect(const format::VortexFile& file, std::ostream& out, bool json);

}  // namespace oc::client
