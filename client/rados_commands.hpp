// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief `onecopy ls rados://pool[/prefix]` and `onecopy cp` between local files and RADOS
/// objects (one Vortex file per object), so users can load their files into a pool.
#pragma once

#include <string>

namespace oc::client {

/// `onecopy ls rados://pool[/prefix]`: "size  object" per object whose name starts with the
/// prefix, sorted by name. @return the exit code.
int run_rados_ls(const std::string& uri);

/// `onecopy cp SRC DST` where one side is `rados://pool/object` and the other a local file. A
/// DST object name ending in `/` (or empty) takes the local file's name. @return the exit code.
int run_rados_cp(const std::string& src, const std::string& dst);

}  // namespace oc::client
