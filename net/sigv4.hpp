// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief AWS Signature Version 4 for S3 requests (header signing).
///
/// The signer builds the canonical request, the string to sign and the signature exactly as the
/// S3 documentation specifies ("Signature Calculations for the Authorization Header"), with the
/// S3 rules: the path is URI-encoded once and never normalized, and `x-amz-content-sha256` is
/// always signed (the payload's SHA-256, or `UNSIGNED-PAYLOAD` for GETs).
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/error.hpp"

namespace oc::net {

struct Credentials {
  std::string access_key;
  std::string secret_key;
  std::string session_token;  ///< sent as x-amz-security-token when non-empty
};

/// What is signed. `headers` must hold `host`; the signer adds none itself.
struct SigningInput {
  std::string_view method;                                   ///< "GET", "PUT", ...
  std::string_view path;                                     ///< raw path, e.g. "/bucket/a b.txt"
  std::vector<std::pair<std::string, std::string>> query;    ///< raw (unencoded) names and values
  std::vector<std::pair<std::string, std::string>> headers;  ///< any case; values are trimmed
  std::string_view payload_hash;  ///< hex SHA-256 of the body, or "UNSIGNED-PAYLOAD"
  std::string_view amz_date;      ///< ISO 8601 basic, "20130524T000000Z"
  std::string_view region;        ///< "us-east-1"
  std::string_view service = "s3";
};

/// The intermediate strings (for tests and debugging) and the result.
struct Signature {
  std::string canonical_request;
  std::string string_to_sign;
  std::string signed_headers;  ///< "host;range;x-amz-content-sha256;x-amz-date"
  std::string signature;       ///< lowercase hex HMAC-SHA256
  std::string authorization;   ///< the Authorization header value
};

/// Signs @p in with @p creds. `Errc::invalid` for a malformed date or missing host header.
[[nodiscard]] Result<Signature> sign_v4(const SigningInput& in, const Credentials& creds);

/// Lowercase hex SHA-256 of @p bytes.
[[nodiscard]] std::string sha256_hex(std::span<const uint8_t> bytes);

/// RFC 3986 percent-encoding of everything but unreserved characters; '/' is kept when
/// @p keep_slash (paths) and encoded otherwise (query names and values).
[[nodiscard]] std::string uri_encode(std::string_view s, bool keep_slash);

/// The canonical query string: names and values URI-encoded ('/' too), pairs sorted, '&'-joined.
/// It is also the query of a presigned URL.
[[nodiscard]] std::string canonical_query(
    const std::vector<std::pair<std::string, std::string>>& query);

}  // namespace oc::net
