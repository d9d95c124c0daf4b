// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief `onecopy ls rados://pool[/prefix]` and `onecopy cp` between local files and RADOS
/// objects (one Vortex file per object), so users can load their files into a pool.
#pragma once

#include <string>
#include <vector>

#include "config/error.hpp"

namespace oc::client {

/// `onecopy ls rados://pool[/prefix]`: "size  object" per object whose name starts with the
/// prefix, sorted by name. @return the exit code.
int run_rados_ls(const std::string& uri);

/// `onecopy cp SRC DST` where one side is `rados://pool/object` and the other a local file. A
/// DST object name ending in `/` (or empty) takes the local file's name. @return the exit code.
int run_rados_cp(const std::string& src, const std::string& dst);

/// The `rados://pool/...` objects @p pattern names, sorted: `rados://pool/` or a name ending in
/// `/` lists the `*.vortex` objects under that prefix; a name with `*`, `?` or `[` lists those
/// it matches (fnmatch, `*` crossing `/`); anything else is itself, unchecked. `not_found` when
/// none matches; `invalid` past @p max_entries objects in the pool.
[[nodiscard]] Result<std::vector<std::string>> expand_rados(const std::string& pattern,
                                                          uint64_t max_entries);

}  // namespace oc::client
