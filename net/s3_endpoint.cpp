// SPDX-License-Identifier: Apache-2.0
#include "net/s3_endpoint.hpp"

#include <cctype>

#include "net/sigv4.hpp"

namespace oc::net {
namespace {

constexpr std::string_view kDefaultRegion = "us-east-1";
constexpr size_t kMaxKeyBytes = 1024;  // S3's limit on object key length

// A setting and where it came from, for the first source that has a non-empty value.
struct Sourced {
  std::string value;
  std::string source;
};

std::optional<Sourced> first_of(std::string_view option, const GetEnv& env,
                                std::initializer_list<std::string_view> vars,
                                const SharedConfig& profile, std::string_view profile_key) {
  if (!option.empty()) return Sourced{std::string(option), "option"};
  for (std::string_view var : vars) {
    if (auto v = env_value(env, var)) return Sourced{*v, std::string(var)};
  }
  if (const std::string* v = profile.get(profile_key); v && !v->empty()) {
    return Sourced{*v, "profile " + profile.profile};
  }
  return std::nullopt;
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// Endpoints the user typed in that are AWS's own still get AWS's default addressing.
bool is_aws_host(std::string_view host) {
  return ends_with(host, ".amazonaws.com") || ends_with(host, ".amazonaws.com.cn");
}

bool use_virtual_host(const S3Endpoint& e, std::string_view bucket) {
  switch (e.addressing) {
    case Addressing::path:
      return false;
    case Addressing::virtual_hosted:
      return true;
    case Addressing::automatic:
      break;
  }
  if (e.custom_endpoint && !is_aws_host(e.endpoint.host)) return false;
  if (is_ip_literal(e.endpoint.host)) return false;
  return !(e.endpoint.tls() && bucket.find('.') != std::string_view::npos);
}

}  // namespace

Result<Addressing> parse_addressing(std::string_view text) {
  std::string l(text);
  for (auto& c : l) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (l == "path") return Addressing::path;
  if (l == "virtual") return Addressing::virtual_hosted;
  if (l == "auto") return Addressing::automatic;
  return OC_ERROR(Errc::invalid, "S3 addressing style '{}' is not one of path, virtual, auto",
                  text);
}

Result<S3Endpoint> resolve_endpoint(const S3Options& options, const GetEnv& env,
                                    const SharedConfig& profile) {
  S3Endpoint e;
  auto region =
      first_of(options.region, env, {"AWS_REGION", "AWS_DEFAULT_REGION"}, profile, "region");
  e.region = region ? region->value : std::string(kDefaultRegion);
  e.region_source = region ? region->source : "builtin";
  // The region becomes part of a host name and of the signing scope.
  for (char c : e.region) {
    OC_EXPECT(std::islower(static_cast<unsigned char>(c)) ||
                  std::isdigit(static_cast<unsigned char>(c)) || c == '-',
              invalid, "region '{}' from {} is not a region name", e.region, e.region_source);
  }

  auto endpoint = first_of(options.endpoint_url, env, {"AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"},
                           profile, "endpoint_url");
  e.custom_endpoint = endpoint.has_value();
  e.endpoint_source = endpoint ? endpoint->source : "builtin";
  auto url =
      parse_url(endpoint ? endpoint->value : fmt::format("https://s3.{}.amazonaws.com", e.region));
  if (!url.ok())
    return std::move(url.error()).with_context(fmt::format("endpoint from {}", e.endpoint_source));
  OC_EXPECT(url->raw_query.empty(), invalid, "endpoint '{}' from {} must not have a query",
            url->original, e.endpoint_source);
  e.endpoint = std::move(*url);

  if (options.addressing) {
    e.addressing = *options.addressing;
  } else if (auto a =
                 first_of({}, env, {"ONECOPY_S3_ADDRESSING"}, profile, "s3.addressing_style")) {
    auto parsed = parse_addressing(a->value);
    if (!parsed.ok())
      return std::move(parsed.error()).with_context(fmt::format("from {}", a->source));
    e.addressing = *parsed;
  }
  return e;
}

std::string RequestTarget::wire_path() const { return uri_encode(path, true); }

Result<RequestTarget> target_for(const S3Endpoint& e, std::string_view bucket,
                                 std::string_view key) {
  OC_TRY(check_bucket_name(bucket));
  OC_EXPECT(key.size() <= kMaxKeyBytes, invalid,
            "object key of {} bytes exceeds S3's {}-byte limit", key.size(), kMaxKeyBytes);
  // An endpoint may sit under a path prefix (a proxy); it is kept, decoded, before the bucket.
  OC_ASSIGN_OR_RETURN(std::string base, percent_decode(e.endpoint.path));
  while (!base.empty() && base.back() == '/') base.pop_back();

  RequestTarget t;
  t.scheme = e.endpoint.scheme;
  t.port = e.endpoint.port;
  t.tls = e.endpoint.tls();
  if (use_virtual_host(e, bucket)) {
    OC_EXPECT(!is_ip_literal(e.endpoint.host), invalid,
              "virtual-hosted addressing needs a host name, but the endpoint is {}",
              e.endpoint.host);
    t.host = fmt::format("{}.{}", bucket, e.endpoint.host);
    t.path = fmt::format("{}/{}", base, key);
  } else {
    t.host = e.endpoint.host;
    t.path = key.empty() ? fmt::format("{}/{}", base, bucket)
                         : fmt::format("{}/{}/{}", base, bucket, key);
  }
  const bool default_port = t.port == (t.tls ? 443 : 80);
  t.host_header = default_port ? t.host : fmt::format("{}:{}", t.host, t.port);
  return t;
}

}  // namespace oc::net
