// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief Parsing of `http(s)://` URLs (endpoints, presigned URLs) and `s3://bucket/key` URIs.
///
/// Only what the S3 client needs: scheme, host (names, IPv4, bracketed IPv6), port, path and
/// query. User info (`user:pass@`) is rejected rather than silently dropped. Every failure is
/// `Errc::invalid` and names the offending input.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/error.hpp"

namespace oc::net {

/// A parsed `http://` or `https://` URL.
struct Url {
  std::string scheme;  ///< "http" or "https", lower-case
  std::string host;    ///< lower-case; IPv6 literals keep their brackets ("[::1]")
  uint16_t port = 0;   ///< the explicit port, else 80 (http) or 443 (https)
  bool explicit_port = false;
  std::string path;       ///< as written (still percent-encoded); "/" when the URL has none
  std::string raw_query;  ///< as written, without '?' and without any fragment
  std::vector<std::pair<std::string, std::string>> query;  ///< decoded, in order; '+' stays '+'
  std::string original;                                    ///< the input

  [[nodiscard]] bool tls() const noexcept { return scheme == "https"; }
  /// @return the HTTP request-target exactly as written: path, then '?' and the raw query if any.
  [[nodiscard]] std::string request_target() const;
  /// @return the Host header value: host, with ":port" only when the port is not the default.
  [[nodiscard]] std::string host_header() const;
};

/// @return @p url fit for logs, errors and output: the query (which holds a presigned URL's
/// signature, credential and token) becomes "?…" and user info "…@". Idempotent.
[[nodiscard]] std::string redact_url(std::string_view url);

/// Parses @p text as an absolute http(s) URL. A fragment is dropped. Its errors name the URL
/// as `redact_url` shows it.
[[nodiscard]] Result<Url> parse_url(std::string_view text);

/// An `s3://bucket/key` URI. The key is taken literally (no percent-decoding, as the AWS CLI
/// does); it is empty for `s3://bucket` and `s3://bucket/`, and may name a prefix.
struct S3Uri {
  std::string bucket;
  std::string key;
};

/// Parses @p text as `s3://bucket[/key]`, checking the bucket name with `check_bucket_name`.
[[nodiscard]] Result<S3Uri> parse_s3_uri(std::string_view text);

/// Checks S3's bucket naming rules: 3..63 characters of lower-case letters, digits, '.' and '-',
/// starting and ending with a letter or digit, no "..", and not shaped like an IPv4 address.
[[nodiscard]] Result<void> check_bucket_name(std::string_view bucket);

/// Decodes %XX escapes (and '+' as a space when @p plus_as_space, as in form encoding).
/// @return `Errc::invalid` for a truncated or non-hex escape.
[[nodiscard]] Result<std::string> percent_decode(std::string_view s, bool plus_as_space = false);

/// @return true when @p host is an IPv4 literal or a bracketed IPv6 literal.
[[nodiscard]] bool is_ip_literal(std::string_view host) noexcept;

/// Fuzzing entry point: runs every parser of this header over @p bytes.
void fuzz_parse_url(std::span<const uint8_t> bytes);

}  // namespace oc::net
