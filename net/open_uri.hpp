// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief Opens a Vortex file by path, `s3://bucket/key` or http(s) URL, and expands dataset
/// patterns (directories, globs, S3 prefixes) into the files they name.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "config/error.hpp"
#include "format/reader.hpp"

namespace oc::net {

/// Local paths go through io_uring file reads; object URIs through the S3 client configured from
/// the environment (AWS_ENDPOINT_URL, AWS_REGION, the credentials chain); `rados://pool/object`
/// through librados, its scans pushed into the OSDs (net/rados_pushdown.hpp).
[[nodiscard]] Result<std::shared_ptr<format::VortexFile>> open_uri(std::string_view uri);

/// Whether @p name (a path or key) names a Vortex file by its suffix, `.vortex`: what a directory
/// or prefix expands to.
[[nodiscard]] bool is_vortex_name(std::string_view name) noexcept;

/// The files @p pattern names, sorted:
/// - `s3://bucket/prefix/` (a trailing slash): every `*.vortex` object under the prefix, at any
///   depth (ListObjectsV2);
/// - `s3://bucket/key*` with `*`, `?` or `[`: the objects whose key matches (fnmatch, `*` also
///   crossing `/`), listing only under the part before the first wildcard;
/// - `rados://pool/` or `rados://pool/prefix*`: as for S3 (librados lists the pool);
/// - a local directory: its `*.vortex` files; a local glob: its matches (glob(3));
/// - anything else (a local file, an s3:// object, an http(s) URL): itself, a local one checked
///   to exist, the others unchecked.
/// `not_found` naming @p pattern when a directory, glob or prefix names no file or a local path
/// does not exist; `invalid` when listing it would
/// go through more than @p max_entries names.
[[nodiscard]] Result<std::vector<std::string>> expand_uri(std::string_view pattern,
                                                          uint64_t max_entries = UINT64_MAX);

}  // namespace oc::net
