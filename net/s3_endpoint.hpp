// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief Where S3 requests go: region, endpoint and bucket addressing, resolved as the AWS SDKs
/// resolve them.
///
/// Region: explicit option, then $AWS_REGION, $AWS_DEFAULT_REGION, the profile's `region`, else
/// "us-east-1". Endpoint: explicit option, then $AWS_ENDPOINT_URL_S3, $AWS_ENDPOINT_URL, the
/// profile's `endpoint_url`, else `https://s3.<region>.amazonaws.com`.
/// Addressing: explicit option, then $ONECOPY_S3_ADDRESSING (path|virtual|auto), then the
/// profile's nested `s3.addressing_style` (as the AWS CLI reads it), else auto. Auto means
/// virtual-hosted (`bucket.host/key`) for AWS endpoints and path-style (`host/bucket/key`) for
/// custom endpoints, IP hosts, and bucket names with dots under TLS (the wildcard certificate
/// `*.s3.<region>.amazonaws.com` does not match them).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "config/error.hpp"
#include "net/aws_config.hpp"
#include "net/url.hpp"

namespace oc::net {

enum class Addressing : uint8_t { automatic, path, virtual_hosted };

/// Parses "path", "virtual" or "auto" (case-insensitive); `Errc::invalid` otherwise.
[[nodiscard]] Result<Addressing> parse_addressing(std::string_view text);

/// What the user configured explicitly; empty fields fall through to the environment.
struct S3Options {
  std::string region{};
  std::string endpoint_url{};
  std::optional<Addressing> addressing{};
};

/// A resolved S3 service endpoint.
struct S3Endpoint {
  std::string region;
  Url endpoint;
  Addressing addressing = Addressing::automatic;
  bool custom_endpoint = false;  ///< the endpoint came from configuration, not the region
  std::string region_source;     ///< "option", "AWS_REGION", "profile default", "builtin", ...
  std::string endpoint_source;   ///< likewise, for the endpoint
};

/// Resolves the endpoint from @p options, then @p env, then @p profile (see the file comment).
/// @return `Errc::invalid` naming the source for an unusable endpoint URL, region or addressing.
[[nodiscard]] Result<S3Endpoint> resolve_endpoint(const S3Options& options, const GetEnv& env,
                                                  const SharedConfig& profile);

/// Where one request for an object (or, with an empty key, a bucket) goes.
struct RequestTarget {
  std::string scheme;  ///< "http" or "https"
  std::string host;    ///< connect to this host (IPv6 keeps its brackets)
  uint16_t port = 0;
  std::string host_header;  ///< Host header value, with ":port" only when not the default
  std::string path;         ///< raw, unencoded: what SigV4 signs, e.g. "/bucket/a b.txt"
  bool tls = false;

  /// @return the path as sent on the request line: URI-encoded once, '/' kept.
  [[nodiscard]] std::string wire_path() const;
};

/// Builds the target for @p bucket and @p key (key may be empty) under @p endpoint's addressing.
/// @return `Errc::invalid` for a bad bucket name, or virtual-hosted addressing forced for a
///         bucket that cannot be a host name label.
[[nodiscard]] Result<RequestTarget> target_for(const S3Endpoint& endpoint, std::string_view bucket,
                                               std::string_view key);

}  // namespace oc::net
