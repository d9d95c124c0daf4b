// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief SigV4 query-string authentication ("presigned URLs") for S3.
///
/// A presigned URL carries its signature in the query (X-Amz-Algorithm, X-Amz-Credential,
/// X-Amz-Date, X-Amz-Expires, X-Amz-SignedHeaders=host, X-Amz-Security-Token, X-Amz-Signature),
/// signs only the Host header and leaves the payload unsigned, as S3's "Authenticating Requests:
/// Using Query Parameters" specifies. Whoever holds the URL may use it until it expires, so it
/// is a secret in itself.
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/error.hpp"
#include "net/s3_endpoint.hpp"
#include "net/sigv4.hpp"
#include "net/url.hpp"

namespace oc::net {

/// What to presign besides the target.
struct PresignInput {
  std::string_view method = "GET";
  std::vector<std::pair<std::string, std::string>> query{};  ///< extra raw parameters to sign
  std::string_view amz_date{};  ///< ISO 8601 basic, "20130524T000000Z": when validity starts
  std::string_view region{};
  std::chrono::seconds expires{};  ///< 1 s to 7 days, SigV4's limit
};

/// Presigns a request for @p target with @p creds.
/// @return the full URL; `Errc::invalid` for an out-of-range expiry, a malformed date or
///         missing (anonymous) credentials.
[[nodiscard]] Result<std::string> presign_url(const RequestTarget& target, const PresignInput& in,
                                              const Credentials& creds);

/// @return true when @p url already carries a SigV4 query signature (X-Amz-Signature), so it
///         must be sent as it is, without signing.
[[nodiscard]] bool is_presigned(const Url& url) noexcept;

}  // namespace oc::net
