// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief AWS credentials: the SDKs' default provider chain, and a caching, refreshing provider.
///
/// The chain, first match wins:
///  1. explicit credentials (or anonymous access, which signs nothing) from the options;
///  2. the environment: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN;
///  3. the shared files' profile: aws_access_key_id, aws_secret_access_key, aws_session_token;
///  4. the container endpoint (ECS, EKS Pod Identity): AWS_CONTAINER_CREDENTIALS_FULL_URI, or
///     http://169.254.170.2 + AWS_CONTAINER_CREDENTIALS_RELATIVE_URI, with the Authorization
///     header from AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE or AWS_CONTAINER_AUTHORIZATION_TOKEN;
///  5. EC2 instance metadata, IMDSv2 only (token, then role name, then the role's credentials),
///     at AWS_EC2_METADATA_SERVICE_ENDPOINT or http://169.254.169.254, unless
///     AWS_EC2_METADATA_DISABLED=true.
/// A source that is not configured passes to the next. A source that is configured but broken
/// (half a key pair, an unknown profile named in AWS_PROFILE, a profile that needs assume-role
/// or SSO, a failing container endpoint) stops the chain with its error, so a mistake never
/// silently falls through to other credentials. Error messages name the sources tried and why
/// each failed, and never contain a secret.
///
/// HTTP is injected (`HttpFetch`) so this file holds only the protocol logic; the S3 client
/// passes a fetch over its own HTTP stack.
#pragma once

#include <fmt/format.h>

#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/error.hpp"
#include "net/aws_config.hpp"
#include "net/reactor.hpp"
#include "net/sigv4.hpp"

namespace oc::net {

/// One HTTP request made on behalf of a credentials source.
struct FetchRequest {
  std::string method;
  std::string url;
  std::vector<std::pair<std::string, std::string>> headers;
  std::chrono::milliseconds timeout;
};

/// Its response: the status and the whole body.
struct FetchResponse {
  int status = 0;
  std::string body;
};

/// Performs one request; an error only for transport failures (a non-200 status is a response).
using HttpFetch = std::function<Result<FetchResponse>(const FetchRequest&)>;

/// The wall clock, injectable for tests.
using WallClock = std::function<std::chrono::system_clock::time_point()>;

/// Credentials and where they came from.
struct ResolvedCredentials {
  Credentials credentials;  ///< empty when `anonymous`
  bool anonymous = false;   ///< requests go unsigned (public buckets)
  /// "explicit", "anonymous", "env", "profile <name>", "container" or "imds", for status output.
  std::string source;
  /// When temporary credentials expire; nullopt for long-term ones.
  std::optional<std::chrono::system_clock::time_point> expiration;
};

/// What the user configured explicitly.
struct CredentialsOptions {
  std::optional<Credentials> explicit_credentials{};
  bool anonymous = false;
  std::string profile{};  ///< overrides $AWS_PROFILE when non-empty
};

/// Runs the chain once (see the file comment).
/// @return `Errc::not_found` listing every source and why it had nothing when none did;
///         otherwise the error of the configured source that failed.
[[nodiscard]] Result<ResolvedCredentials> resolve_credentials(const CredentialsOptions& options,
                                                              const GetEnv& env,
                                                              const HttpFetch& fetch);

/// The container source alone. `Errc::not_found` when its variables are unset.
[[nodiscard]] Result<ResolvedCredentials> container_credentials(const GetEnv& env,
                                                                const HttpFetch& fetch);

/// The IMDSv2 source alone. `Errc::not_found` when disabled by AWS_EC2_METADATA_DISABLED.
[[nodiscard]] Result<ResolvedCredentials> imds_credentials(const GetEnv& env,
                                                           const HttpFetch& fetch);

/// Parses an ISO 8601 UTC timestamp as AWS sends it: "2026-11-29T12:00:00Z", optionally with
/// fractional seconds and a "+hh:mm"/"-hh:mm" offset in place of "Z".
[[nodiscard]] Result<std::chrono::system_clock::time_point> parse_iso8601(std::string_view text);

/// @return @p secret fit for logs: its first 4 characters and "…" (only "…" when it is too short
///         to show any of it, "(none)" when empty).
[[nodiscard]] std::string redact(std::string_view secret);

/// Caches the chain's credentials and refreshes temporary ones `credentials_refresh_margin_s`
/// before they expire. Thread-safe; a refresh holds the lock, so concurrent callers wait for it
/// rather than stampede the metadata endpoint. If a refresh fails while the cached credentials
/// have not yet expired, they are returned and a warning is logged.
class CredentialsProvider {
 public:
  CredentialsProvider(CredentialsOptions options, GetEnv env, HttpFetch fetch,
                      WallClock clock = {});

  /// @return current credentials, resolving or refreshing them when needed. One refresh runs
  /// at a time and no lock is held while it fetches: other callers meanwhile get the current
  /// credentials while they are still valid, and otherwise wait for the refresh (a fiber
  /// suspends) and share its result.
  [[nodiscard]] Result<ResolvedCredentials> get();

  [[nodiscard]] uint64_t refreshes() const;  ///< resolutions run so far

 private:
  CredentialsOptions options_;
  GetEnv env_;
  HttpFetch fetch_;
  WallClock clock_;
  mutable std::mutex mu_;
  std::optional<ResolvedCredentials> cached_;
  bool refreshing_ = false;
  std::vector<Waiter*> waiters_;                     // callers waiting for the refresh
  std::optional<Result<ResolvedCredentials>> last_;  // the latest refresh's result, for them
  uint64_t refreshes_ = 0;
};

}  // namespace oc::net

/// Formats credentials with every field redacted, so they can never leak into a log line.
template <>
struct fmt::formatter<oc::net::Credentials> : fmt::formatter<std::string_view> {
  auto format(const oc::net::Credentials& c, format_context& ctx) const -> decltype(ctx.out()) {
    return fmt::format_to(ctx.out(), "access_key={} secret_key={} session_token={}",
                          oc::net::redact(c.access_key), oc::net::redact(c.secret_key),
                          oc::net::redact(c.session_token));
  }
};
