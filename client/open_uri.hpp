// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief Opens a Vortex file by path, `s3://bucket/key` or http(s) URL.
#pragma once

#include <memory>
#include <string_view>

#include "config/error.hpp"
#include "format/reader.hpp"

namespace oc::client {

/// Local paths go through io_uring file reads; object URIs through the S3 client configured from
/// the environment (AWS_ENDPOINT_URL, AWS_REGION, the credentials chain).
[[nodiscard]] Result<std::shared_ptr<format::VortexFile>> open_uri(std::string_view uri);

}  // namespace oc::client
