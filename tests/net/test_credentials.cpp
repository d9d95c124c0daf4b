// SPDX-License-Identifier: Apache-2.0
// The credentials chain with an injected environment and HTTP fetch: order, exact requests made
// to the container and metadata endpoints, refresh timing, and secrets kept out of messages.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>

#include "config/defaults.hpp"
#include "net/credentials.hpp"
#include "tests/net/fake_env.hpp"

using namespace oc;
using namespace std::chrono_literals;

namespace {

constexpr std::string_view kSecret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
constexpr std::string_view kToken = "IQoJb3JpZ2luX2VjEXAMPLETOKEN";

std::string creds_json(std::string_view expiration = "2026-11-29T12:00:00Z") {
  return fmt::format(R"({{"Code":"Success","Type":"AWS-HMAC","AccessKeyId":"ASIAEXAMPLE",
    "SecretAccessKey":"{}","Token":"{}","Expiration":"{}"}})",
                     kSecret, kToken, expiration);
}

// Answers requests from a table keyed by "METHOD URL" and records every request made.
struct FakeServer {
  std::map<std::string, net::FetchResponse> routes;
  std::vector<net::FetchRequest> requests;
  bool unreachable = false;

  net::HttpFetch fetch() {
    return [this](const net::FetchRequest& r) -> Result<net::FetchResponse> {
      requests.push_back(r);
      if (unreachable) return OC_ERROR(Errc::timeout, "connect to {} timed out", r.url);
      auto it = routes.find(r.method + " " + r.url);
      return it == routes.end() ? net::FetchResponse{404, "Not Found"} : it->second;
    };
  }
};

void serve_imds(FakeServer& s, std::string body = creds_json(),
                std::string base = "http://169.254.169.254") {
  s.routes["PUT " + base + "/latest/api/token"] = {200, "IMDS-SESSION"};
  s.routes["GET " + base + "/latest/meta-data/iam/security-credentials/"] = {200, "my-role\n"};
  s.routes["GET " + base + "/latest/meta-data/iam/security-credentials/my-role"] = {
      200, std::move(body)};
}

std::string header(const net::FetchRequest& r, std::string_view name) {
  for (const auto& [k, v] : r.headers) {
    if (k == name) return v;
  }
  return "(absent)";
}

// A HOME with no ~/.aws files, so the machine's own never leak into a test.
const test::EnvMap kEmptyHome{{"HOME", "/nonexistent-oc-home"}};

test::EnvMap with(test::EnvMap extra) {
  test::EnvMap env = kEmptyHome;
  for (auto& [k, v] : extra) env[k] = v;
  return env;
}

struct TempFile {
  std::string path;
  explicit TempFile(const std::string& text) {
    char tmpl[] = "/tmp/oc-creds-XXXXXX";
    const int fd = mkstemp(tmpl);
    close(fd);
    path = tmpl;
    std::ofstream(path) << text;
  }
  ~TempFile() { std::filesystem::remove(path); }
};

}  // namespace

TEST_CASE("chain order: explicit, env, profile", "[net][credentials]") {
  TempFile creds(
      "[default]\naws_access_key_id = AKIAPROFILE\naws_secret_access_key = profile-secret\n"
      "[other]\naws_access_key_id=AKIAOTHER\naws_secret_access_key=other-secret\n"
      "aws_session_token=other-token\n");
  FakeServer server;
  const auto env = with({{"AWS_ACCESS_KEY_ID", "AKIAENV"},
                         {"AWS_SECRET_ACCESS_KEY", "env-secret"},
                         {"AWS_SESSION_TOKEN", "env-token"},
                         {"AWS_SHARED_CREDENTIALS_FILE", creds.path}});

  net::CredentialsOptions explicit_opts;
  explicit_opts.explicit_credentials = net::Credentials{"AKIAEXPLICIT", "s", ""};
  auto r = net::resolve_credentials(explicit_opts, test::env_of(env), server.fetch());
  REQUIRE(r.ok());
  CHECK(r->source == "explicit");
  CHECK(r->credentials.access_key == "AKIAEXPLICIT");

  r = net::resolve_credentials({}, test::env_of(env), server.fetch());
  REQUIRE(r.ok());
  CHECK(r->source == "env");
  CHECK(r->credentials.session_token == "env-token");
  CHECK_FALSE(r->expiration);

  auto no_env = with({{"AWS_SHARED_CREDENTIALS_FILE", creds.path}});
  r = net::resolve_credentials({}, test::env_of(no_env), server.fetch());
  REQUIRE(r.ok());
  CHECK(r->source == "profile default");
  CHECK(r->credentials.access_key == "AKIAPROFILE");

  no_env["AWS_PROFILE"] = "other";
  r = net::resolve_credentials({}, test::env_of(no_env), server.fetch());
  REQUIRE(r.ok());
  CHECK(r->source == "profile other");
  CHECK(r->credentials.session_token == "other-token");

  net::CredentialsOptions anon;
  anon.anonymous = true;
  r = net::resolve_credentials(anon, test::env_of(env), server.fetch());
  REQUIRE(r.ok());
  CHECK(r->anonymous);
  CHECK(r->source == "anonymous");
  CHECK(server.requests.empty());  // nothing above needed the network
}

TEST_CASE("nothing configured: one error listing every source", "[net][credentials]") {
  FakeServer server;
  server.unreachable = true;
  auto r = net::resolve_credentials({}, test::env_of(kEmptyHome), server.fetch());
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code() == Errc::not_found);
  const std::string msg = r.error().message();
  for (const char* part :
       {"env: AWS_ACCESS_KEY_ID is not set", "profile: profile default",
        "container: AWS_CONTAINER_CREDENTIALS_FULL_URI", "imds:", "timed out", "anonymous"}) {
    INFO(msg);
    CHECK(msg.find(part) != std::string::npos);
  }
  CHECK(server.requests.size() == 1);  // only the IMDS token PUT, which failed fast
  CHECK(server.requests[0].timeout ==
        std::chrono::milliseconds(defaults().credentials_fetch_timeout_ms));

  server.requests.clear();
  r = net::resolve_credentials({}, test::env_of(with({{"AWS_EC2_METADATA_DISABLED", "true"}})),
                               server.fetch());
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message().find("imds: disabled by AWS_EC2_METADATA_DISABLED") !=
        std::string::npos);
  CHECK(server.requests.empty());
}

TEST_CASE("broken configuration stops the chain", "[net][credentials]") {
  FakeServer server;
  serve_imds(server);  // would succeed, but must not be reached
  auto r = net::resolve_credentials({}, test::env_of(with({{"AWS_ACCESS_KEY_ID", "AKIAHALF"}})),
                                    server.fetch());
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code() == Errc::invalid);

  r = net::resolve_credentials({}, test::env_of(with({{"AWS_PROFILE", "missing"}})),
                               server.fetch());
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message().find("'missing'") != std::string::npos);

  TempFile role("[profile dev]\nrole_arn = arn:aws:iam::123:role/x\nsource_profile = base\n");
  r = net::resolve_credentials(
      {.profile = "dev"}, test::env_of(with({{"AWS_CONFIG_FILE", role.path}})), server.fetch());
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code() == Errc::unsupported);
  CHECK(r.error().message().find("role_arn") != std::string::npos);

  TempFile half("[default]\naws_secret_access_key = half-secret-value-here\n");
  r = net::resolve_credentials({}, test::env_of(with({{"AWS_SHARED_CREDENTIALS_FILE", half.path}})),
                               server.fetch());
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().to_string().find("half-secret") == std::string::npos);
  CHECK(server.requests.empty());

  net::CredentialsOptions empty;
  empty.explicit_credentials = net::Credentials{};
  CHECK(net::resolve_credentials(empty, test::env_of(kEmptyHome), server.fetch()).error().code() ==
        Errc::invalid);
}

TEST_CASE("container credentials: relative URI and token", "[net][credentials]") {
  FakeServer server;
  server.routes["GET http://169.254.170.2/v2/credentials/abc"] = {200, creds_json()};
  auto r = net::resolve_credentials(
      {},
      test::env_of(with({{"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "/v2/credentials/abc"},
                         {"AWS_CONTAINER_AUTHORIZATION_TOKEN", "Basic c2VjcmV0"}})),
      server.fetch());
  REQUIRE(r.ok());
  CHECK(r->source == "container");
  CHECK(r->credentials.access_key == "ASIAEXAMPLE");
  CHECK(r->credentials.secret_key == kSecret);
  CHECK(r->credentials.session_token == kToken);
  REQUIRE(r->expiration);
  CHECK(*r->expiration == *net::parse_iso8601("2026-11-29T12:00:00Z"));
  REQUIRE(server.requests.size() == 1);
  CHECK(server.requests[0].method == "GET");
  CHECK(server.requests[0].url == "http://169.254.170.2/v2/credentials/abc");
  CHECK(header(server.requests[0], "Authorization") == "Basic c2VjcmV0");
}

TEST_CASE("container credentials: full URI and token file", "[net][credentials]") {
  TempFile token("eks-pod-identity-token\n");
  FakeServer server;
  server.routes["GET http://169.254.170.23/v1/credentials"] = {200, creds_json()};
  const auto env =
      test::env_of({{"AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://169.254.170.23/v1/credentials"},
                    {"AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", token.path},
                    {"AWS_CONTAINER_AUTHORIZATION_TOKEN", "ignored"}});
  auto r = net::container_credentials(env, server.fetch());
  REQUIRE(r.ok());
  CHECK(header(server.requests.at(0), "Authorization") == "eks-pod-identity-token");

  // The token would travel in the clear to an arbitrary host: refused.
  auto remote = net::container_credentials(
      test::env_of({{"AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://attacker.example/creds"}}),
      server.fetch());
  CHECK(remote.error().code() == Errc::invalid);
  CHECK(net::container_credentials(
            test::env_of({{"AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://127.0.0.1:8080/c"},
                          {"AWS_CONTAINER_AUTHORIZATION_TOKEN", "a\r\nX-Evil: 1"}}),
            server.fetch())
            .error()
            .code() == Errc::invalid);
  CHECK(net::container_credentials(test::env_of({}), server.fetch()).error().code() ==
        Errc::not_found);
}

TEST_CASE("container credentials: endpoint failures stop the chain without leaking",
          "[net][credentials]") {
  const auto env =
      test::env_of(with({{"AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://localhost:9911/creds"},
                         {"AWS_CONTAINER_AUTHORIZATION_TOKEN", "tok-SECRET"}}));
  const std::vector<std::pair<net::FetchResponse, Errc>> cases = {
      {{500, "oops"}, Errc::io},
      {{200, "not json " + std::string(kSecret)}, Errc::protocol},
      {{200, "[1,2]"}, Errc::protocol},
      {{200, fmt::format(R"({{"AccessKeyId":"A","SecretAccessKey":7,"Token":"{}"}})", kToken)},
       Errc::protocol},
      {{200, fmt::format(R"({{"AccessKeyId":"A","SecretAccessKey":"{}","Expiration":"soon"}})",
                         kSecret)},
       Errc::invalid},
  };
  for (const auto& [resp, code] : cases) {
    FakeServer server;
    server.routes["GET http://localhost:9911/creds"] = resp;
    serve_imds(server);
    auto r = net::resolve_credentials({}, env, server.fetch());
    INFO(resp.body);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code() == code);
    const std::string text = r.error().to_string();
    CHECK(text.find(kSecret) == std::string::npos);
    CHECK(text.find(kToken) == std::string::npos);
    CHECK(text.find("tok-SECRET") == std::string::npos);
    CHECK(server.requests.size() == 1);  // IMDS was not tried
  }
}

TEST_CASE("IMDSv2: token, role, credentials", "[net][credentials]") {
  FakeServer server;
  serve_imds(server);
  auto r = net::resolve_credentials({}, test::env_of(kEmptyHome), server.fetch());
  REQUIRE(r.ok());
  CHECK(r->source == "imds");
  CHECK(r->credentials.secret_key == kSecret);
  REQUIRE(server.requests.size() == 3);
  const auto& put = server.requests[0];
  CHECK(put.method == "PUT");
  CHECK(put.url == "http://169.254.169.254/latest/api/token");
  CHECK(header(put, "X-aws-ec2-metadata-token-ttl-seconds") == "21600");
  CHECK(header(put, "X-aws-ec2-metadata-token") == "(absent)");
  CHECK(server.requests[1].method == "GET");
  CHECK(server.requests[1].url ==
        "http://169.254.169.254/latest/meta-data/iam/security-credentials/");
  CHECK(header(server.requests[1], "X-aws-ec2-metadata-token") == "IMDS-SESSION");
  CHECK(server.requests[2].url ==
        "http://169.254.169.254/latest/meta-data/iam/security-credentials/my-role");
  CHECK(header(server.requests[2], "X-aws-ec2-metadata-token") == "IMDS-SESSION");
  for (const auto& req : server.requests) {
    CHECK(req.timeout == std::chrono::milliseconds(defaults().credentials_fetch_timeout_ms));
  }
}

TEST_CASE("IMDSv2: endpoint override and failures", "[net][credentials]") {
  FakeServer server;
  serve_imds(server, creds_json(), "http://[fd00:ec2::254]");
  auto r = net::imds_credentials(
      test::env_of({{"AWS_EC2_METADATA_SERVICE_ENDPOINT", "http://[fd00:ec2::254]/"}}),
      server.fetch());
  REQUIRE(r.ok());
  CHECK(server.requests.at(0).url == "http://[fd00:ec2::254]/latest/api/token");

  FakeServer no_role;
  no_role.routes["PUT http://169.254.169.254/latest/api/token"] = {200, "T"};
  auto e = net::imds_credentials(test::env_of({}), no_role.fetch());
  CHECK(e.error().code() == Errc::not_found);
  CHECK(e.error().message().find("no IAM role") != std::string::npos);

  FakeServer forbidden;
  forbidden.routes["PUT http://169.254.169.254/latest/api/token"] = {403, ""};
  CHECK(net::imds_credentials(test::env_of({}), forbidden.fetch()).error().code() == Errc::io);

  FakeServer failing;
  serve_imds(failing, R"({"Code":"AssumeRoleUnauthorizedAccess","Message":"x"})");
  e = net::imds_credentials(test::env_of({}), failing.fetch());
  CHECK(e.error().message().find("AssumeRoleUnauthorizedAccess") != std::string::npos);

  FakeServer evil_role;
  serve_imds(evil_role);
  evil_role.routes["GET http://169.254.169.254/latest/meta-data/iam/security-credentials/"] = {
      200, "../x\n"};
  CHECK(net::imds_credentials(test::env_of({}), evil_role.fetch()).error().code() ==
        Errc::protocol);
  CHECK(net::imds_credentials(
            test::env_of({{"AWS_EC2_METADATA_SERVICE_ENDPOINT", "169.254.169.254"}}),
            evil_role.fetch())
            .error()
            .code() == Errc::invalid);
}

TEST_CASE("ISO 8601 expirations", "[net][credentials]") {
  const auto base = net::parse_iso8601("2026-11-29T12:00:00Z");
  REQUIRE(base.ok());
  CHECK(base->time_since_epoch() == std::chrono::seconds(1795953600));
  CHECK(*net::parse_iso8601("2026-11-29T12:00:00.123Z") == *base);
  CHECK(*net::parse_iso8601("2026-11-29T14:00:00+02:00") == *base);
  CHECK(*net::parse_iso8601("2026-11-29T11:30:00-00:30") == *base);
  for (const char* bad :
       {"", "2026-11-29", "2026-11-29T12:00:00", "2026-13-01T00:00:00Z", "2026-02-30T00:00:00Z",
        "2026-11-29T24:00:00Z", "2026-11-29 12:00:00Z", "2026-11-29T12:00:00+0200",
        "20261129T120000Z", "2026-11-29T12:00:00Zjunk"}) {
    INFO(bad);
    CHECK(net::parse_iso8601(bad).error().code() == Errc::invalid);
  }
}

TEST_CASE("the provider caches and refreshes before expiry", "[net][credentials]") {
  FakeServer server;
  serve_imds(server, creds_json("2026-11-29T12:00:00Z"));
  auto now = *net::parse_iso8601("2026-11-29T11:00:00Z");
  net::CredentialsProvider provider({}, test::env_of(kEmptyHome), server.fetch(),
                                    [&] { return now; });
  const auto margin = std::chrono::seconds(defaults().credentials_refresh_margin_s);

  REQUIRE(provider.get().ok());
  CHECK(server.requests.size() == 3);
  REQUIRE(provider.get().ok());
  CHECK(server.requests.size() == 3);  // cached

  now = *net::parse_iso8601("2026-11-29T12:00:00Z") - margin - 1s;
  REQUIRE(provider.get().ok());
  CHECK(server.requests.size() == 3);  // still outside the margin

  // Inside the margin: refreshed, and the new expiry is taken.
  serve_imds(server, creds_json("2026-11-29T18:00:00Z"));
  now += 2s;
  auto r = provider.get();
  REQUIRE(r.ok());
  CHECK(server.requests.size() == 6);
  CHECK(*r->expiration == *net::parse_iso8601("2026-11-29T18:00:00Z"));

  // A failed refresh keeps credentials that have not yet expired, then gives up on them.
  server.unreachable = true;
  now = *net::parse_iso8601("2026-11-29T17:58:00Z");
  r = provider.get();
  REQUIRE(r.ok());
  CHECK(r->source == "imds");
  now = *net::parse_iso8601("2026-11-29T18:00:01Z");
  CHECK(provider.get().error().code() == Errc::not_found);
}

TEST_CASE("long-term credentials are fetched once", "[net][credentials]") {
  int calls = 0;
  net::CredentialsProvider provider(
      {},
      test::env_of(with(
          {{"AWS_ACCESS_KEY_ID", "AKIAENV"}, {"AWS_SECRET_ACCESS_KEY", std::string(kSecret)}})),
      [&](const net::FetchRequest&) -> Result<net::FetchResponse> {
        ++calls;
        return net::FetchResponse{};
      });
  for (int i = 0; i < 3; ++i) CHECK(provider.get()->source == "env");
  CHECK(calls == 0);
}

TEST_CASE("secrets are redacted when formatted", "[net][credentials]") {
  CHECK(net::redact("") == "(none)");
  CHECK(net::redact("short") == "…");
  CHECK(net::redact(kSecret) == "wJal…");
  const net::Credentials c{"AKIAIOSFODNN7EXAMPLE", std::string(kSecret), std::string(kToken)};
  const std::string s = fmt::format("{}", c);
  CHECK(s == "access_key=AKIA… secret_key=wJal… session_token=IQoJ…");
  CHECK(s.find("EXAMPLEKEY") == std::string::npos);
}
