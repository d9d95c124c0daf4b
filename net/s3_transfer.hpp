// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief Whole-object copies between S3 and local files, for `onecopy cp`.
///
/// Downloads split the object into `s3_get_part_bytes` ranges fetched in parallel (pinned to the
/// first ETag) straight into a shared mapping of the destination file, written under a temporary
/// name and renamed into place only when complete. Uploads below `s3_multipart_threshold` are
/// one PUT; larger ones are a multipart upload whose parts (`s3_multipart_part_bytes`) go up in
/// parallel and which is aborted if any part finally fails.
#pragma once

#include <cstdint>
#include <string>

#include "config/error.hpp"
#include "net/s3_client.hpp"

namespace oc::net {

struct TransferResult {
  uint64_t bytes = 0;
  uint32_t requests = 0;  ///< parts or ranges
  bool multipart = false;
};

[[nodiscard]] Result<TransferResult> download_to_file(S3Client& client, const ObjectRef& src,
                                                      const std::string& path);

[[nodiscard]] Result<TransferResult> upload_from_file(S3Client& client, const std::string& path,
                                                      std::string_view bucket,
                                                      std::string_view key);

}  // namespace oc::net
