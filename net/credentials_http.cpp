// SPDX-License-Identifier: Apache-2.0
// The two credentials sources that are HTTP endpoints: the container endpoint and IMDSv2.
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "config/defaults.hpp"
#include "config/strings.hpp"
#include "net/credentials.hpp"
#include "net/url.hpp"

namespace oc::net {
namespace {

constexpr std::string_view kContainerHost = "http://169.254.170.2";
constexpr std::string_view kImdsEndpoint = "http://169.254.169.254";

std::chrono::milliseconds fetch_timeout() {
  return std::chrono::milliseconds(defaults().credentials_fetch_timeout_ms);
}

// Reads the string member @p key of @p j; empty when absent or not a string. Bodies are never
// quoted in errors: they hold the secret key.
std::string member(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string{};
}

Result<ResolvedCredentials> parse_credentials_json(std::string_view body, std::string_view source) {
  const nlohmann::json j = nlohmann::json::parse(body, nullptr, false);
  OC_EXPECT(!j.is_discarded() && j.is_object(), protocol,
            "{} credentials response is not a JSON object", source);
  // IMDS reports failures in a "Code" member next to 200 OK.
  const std::string code = member(j, "Code");
  OC_EXPECT(code.empty() || code == "Success", protocol, "{} credentials response has Code '{}'",
            source, code);
  ResolvedCredentials r;
  r.source = std::string(source);
  r.credentials.access_key = member(j, "AccessKeyId");
  r.credentials.secret_key = member(j, "SecretAccessKey");
  r.credentials.session_token = member(j, "Token");
  OC_EXPECT(!r.credentials.access_key.empty() && !r.credentials.secret_key.empty(), protocol,
            "{} credentials response lacks AccessKeyId or SecretAccessKey", source);
  if (const std::string expiration = member(j, "Expiration"); !expiration.empty()) {
    auto t = parse_iso8601(expiration);
    if (!t.ok())
      return std::move(t.error()).with_context(
          fmt::format("in the {} credentials' Expiration", source));
    r.expiration = *t;
  }
  return r;
}

Result<FetchResponse> fetch_ok(const HttpFetch& fetch, FetchRequest req, std::string_view what) {
  auto resp = fetch(req);
  if (!resp.ok())
    return std::move(resp.error()).with_context(fmt::format("{} {}", req.method, req.url));
  OC_EXPECT(resp->status == 200, io, "{}: {} {} answered HTTP {}", what, req.method, req.url,
            resp->status);
  return resp;
}

// Plain http carries the authorization token in the clear, so the SDKs allow it only to the
// ECS and EKS link-local agents and to loopback.
bool may_use_plain_http(const Url& url) {
  const std::string& h = url.host;
  return h == "localhost" || h == "[::1]" || h.rfind("127.", 0) == 0 || h == "169.254.170.2" ||
         h == "169.254.170.23" || h == "[fd00:ec2::23]";
}

Result<std::string> container_token(const GetEnv& env) {
  std::string token;
  if (auto path = env_value(env, "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE")) {
    // Re-read on every fetch: EKS rotates the file.
    std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path->c_str(), "rb"), &std::fclose);
    if (!f)
      return errno_error(-errno,
                         fmt::format("opening AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE {}", *path),
                         __FILE__, __LINE__);
    char buf[4096];
    size_t n = 0;
    while ((n = std::fread(buf, 1, sizeof buf, f.get())) > 0) token.append(buf, n);
    token = std::string(trim(token));
  } else if (auto v = env_value(env, "AWS_CONTAINER_AUTHORIZATION_TOKEN")) {
    token = *v;
  }
  OC_EXPECT(token.find_first_of("\r\n") == std::string::npos, invalid,
            "the container authorization token contains a line break");
  return token;
}

}  // namespace

Result<ResolvedCredentials> container_credentials(const GetEnv& env, const HttpFetch& fetch) {
  std::string url_text;
  if (auto full = env_value(env, "AWS_CONTAINER_CREDENTIALS_FULL_URI")) {
    url_text = *full;
  } else if (auto relative = env_value(env, "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI")) {
    url_text =
        fmt::format("{}{}{}", kContainerHost, relative->front() == '/' ? "" : "/", *relative);
  } else {
    return OC_ERROR(Errc::not_found,
                    "AWS_CONTAINER_CREDENTIALS_FULL_URI and AWS_CONTAINER_CREDENTIALS_RELATIVE_URI "
                    "are not set");
  }
  OC_ASSIGN_OR_RETURN(const Url url, parse_url(url_text));
  OC_EXPECT(url.tls() || may_use_plain_http(url), invalid,
            "container credentials over plain http are allowed only to loopback or the ECS/EKS "
            "agents, not {}",
            url.host);
  OC_ASSIGN_OR_RETURN(const std::string token, container_token(env));
  FetchRequest req{"GET", url_text, {}, fetch_timeout()};
  if (!token.empty()) req.headers.emplace_back("Authorization", token);
  OC_ASSIGN_OR_RETURN(const FetchResponse resp,
                      fetch_ok(fetch, std::move(req), "container credentials"));
  return parse_credentials_json(resp.body, "container");
}

Result<ResolvedCredentials> imds_credentials(const GetEnv& env, const HttpFetch& fetch) {
  if (auto disabled = env("AWS_EC2_METADATA_DISABLED"); disabled && trim(*disabled) == "true") {
    return OC_ERROR(Errc::not_found, "disabled by AWS_EC2_METADATA_DISABLED");
  }
  std::string base =
      env_value(env, "AWS_EC2_METADATA_SERVICE_ENDPOINT").value_or(std::string(kImdsEndpoint));
  while (!base.empty() && base.back() == '/') base.pop_back();
  OC_TRY(parse_url(base));

  OC_ASSIGN_OR_RETURN(
      const FetchResponse token,
      fetch_ok(
          fetch,
          {"PUT",
           base + "/latest/api/token",
           {{"X-aws-ec2-metadata-token-ttl-seconds", std::to_string(defaults().imds_token_ttl_s)}},
           fetch_timeout()},
          "IMDSv2 token"));
  const std::string session(trim(token.body));
  OC_EXPECT(!session.empty() && session.find_first_of("\r\n") == std::string::npos, protocol,
            "IMDSv2 returned an unusable session token");
  const std::pair<std::string, std::string> auth{"X-aws-ec2-metadata-token", session};

  const std::string roles_url = base + "/latest/meta-data/iam/security-credentials/";
  auto roles = fetch(FetchRequest{"GET", roles_url, {auth}, fetch_timeout()});
  if (!roles.ok()) return std::move(roles.error()).with_context("GET " + roles_url);
  OC_EXPECT(roles->status != 404, not_found, "no IAM role is attached to this instance");
  OC_EXPECT(roles->status == 200, io, "GET {} answered HTTP {}", roles_url, roles->status);
  const std::string_view listing = trim(roles->body);
  const std::string role(trim(listing.substr(0, listing.find('\n'))));
  // The role name becomes a path segment; IAM allows only these characters in it.
  OC_EXPECT(
      !role.empty() && role.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                              "0123456789+=,.@_-") == std::string::npos,
      protocol, "IMDS returned an unusable role name");

  OC_ASSIGN_OR_RETURN(
      const FetchResponse creds,
      fetch_ok(fetch, {"GET", roles_url + role, {auth}, fetch_timeout()}, "IMDS credentials"));
  return parse_credentials_json(creds.body, "imds");
}

}  // namespace oc::net
