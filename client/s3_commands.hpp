// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief `onecopy ls` and `onecopy cp`: object-store operations for ops, on the same client and
/// environment as scans.
#pragma once

#include <string>
#include <vector>

namespace oc::client {

/// `onecopy ls s3://bucket[/prefix] [--recursive]`: one line per object ("size  key") and per
/// common prefix ("PRE prefix/"), like `aws s3 ls`. @return the exit code.
int run_ls(const std::vector<std::string>& args);

/// `onecopy cp SRC DST`: S3 (or http(s) URL) to a local file, or a local file to S3.
/// @return the exit code.
int run_cp(const std::vector<std::string>& args);

}  // namespace oc::client
