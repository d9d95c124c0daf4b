// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief The S3 XML bodies the client reads and writes, on pugixml.
///
/// Elements are matched by local name, so the S3 namespace
/// (xmlns="http://s3.amazonaws.com/doc/2006-03-01/") or a prefix on it makes no difference.
/// A body that is not XML, or lacks a required element, is `Errc::protocol` naming what was
/// expected. ETags are returned as sent, quotes included, as If-Match and CompleteMultipartUpload
/// want them back.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "config/error.hpp"

namespace oc::net {

/// One `<Contents>` entry of a listing.
struct ListedObject {
  std::string key;
  uint64_t size = 0;
  std::string etag;
  std::string last_modified;  ///< ISO 8601, as sent
};

/// One page of a ListObjectsV2 response (`<ListBucketResult>`).
struct ListObjectsPage {
  std::vector<ListedObject> contents;
  std::vector<std::string> common_prefixes;
  bool is_truncated = false;
  std::string next_continuation_token;  ///< pass back as continuation-token; empty on the last page
  std::optional<uint64_t> key_count;
};

/// Parses a ListObjectsV2 result. With `<EncodingType>url</EncodingType>`, keys and prefixes are
/// decoded. `Errc::protocol` for a truncated page without a continuation token.
[[nodiscard]] Result<ListObjectsPage> parse_list_objects_v2(std::string_view xml);

/// An S3 `<Error>` body.
struct S3ErrorBody {
  std::string code;  ///< "NoSuchKey", "SlowDown", ...
  std::string message;
  std::string request_id;
  std::string resource;
};

/// Parses an `<Error>` body; fields the server left out are empty.
[[nodiscard]] Result<S3ErrorBody> parse_s3_error(std::string_view xml);

/// @return the UploadId of an `<InitiateMultipartUploadResult>`.
[[nodiscard]] Result<std::string> parse_initiate_multipart(std::string_view xml);

/// What `<CompleteMultipartUploadResult>` reports.
struct CompletedUpload {
  std::string etag;
  std::string location;
};

/// Parses the result of CompleteMultipartUpload. S3 may answer 200 with an `<Error>` body here;
/// that is returned as `Errc::io` carrying the S3 code and message.
[[nodiscard]] Result<CompletedUpload> parse_complete_multipart(std::string_view xml);

/// One uploaded part: its number (1..10000) and the ETag its upload returned.
struct CompletedPart {
  uint32_t number = 0;
  std::string etag;
};

/// Builds the CompleteMultipartUpload request body; text is XML-escaped.
/// @return `Errc::invalid` for no parts, a number outside 1..10000, or numbers not ascending.
[[nodiscard]] Result<std::string> complete_multipart_body(std::span<const CompletedPart> parts);

/// Fuzzing entry point: runs every parser of this header over @p bytes.
void fuzz_parse_s3_xml(std::span<const uint8_t> bytes);

}  // namespace oc::net
