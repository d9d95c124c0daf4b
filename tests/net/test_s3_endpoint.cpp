// SPDX-License-Identifier: Apache-2.0
// Region, endpoint and addressing resolution with an injected environment, and request targets.
#include <catch2/catch.hpp>

#include "net/s3_endpoint.hpp"
#include "tests/net/fake_env.hpp"

using namespace oc;

namespace {

net::SharedConfig profile_with(net::ProfileSettings settings) {
  net::SharedConfig c;
  c.profile = "default";
  c.profile_found = true;
  c.settings = std::move(settings);
  return c;
}

net::S3Endpoint resolve(const net::S3Options& o, test::EnvMap env,
                        net::ProfileSettings profile = {}) {
  auto e = net::resolve_endpoint(o, test::env_of(std::move(env)), profile_with(std::move(profile)));
  REQUIRE(e.ok());
  return std::move(*e);
}

}  // namespace

TEST_CASE("region precedence", "[net][s3_endpoint]") {
  const test::EnvMap all{{"AWS_REGION", "eu-west-1"}, {"AWS_DEFAULT_REGION", "eu-west-2"}};
  CHECK(resolve({.region = "ap-east-1"}, all).region == "ap-east-1");
  CHECK(resolve({}, all, {{"region", "sa-east-1"}}).region == "eu-west-1");
  CHECK(resolve({}, {{"AWS_DEFAULT_REGION", "eu-west-2"}}, {{"region", "sa-east-1"}}).region ==
        "eu-west-2");
  auto e = resolve({}, {{"AWS_REGION", ""}}, {{"region", "sa-east-1"}});  // empty counts as unset
  CHECK(e.region == "sa-east-1");
  CHECK(e.region_source == "profile default");
  e = resolve({}, {});
  CHECK(e.region == "us-east-1");
  CHECK(e.region_source == "builtin");
  CHECK(e.endpoint.original == "https://s3.us-east-1.amazonaws.com");
  CHECK_FALSE(e.custom_endpoint);

  auto bad = net::resolve_endpoint({}, test::env_of({{"AWS_REGION", "us-east-1.evil.com/"}}), {});
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message().find("AWS_REGION") != std::string::npos);
}

TEST_CASE("endpoint precedence", "[net][s3_endpoint]") {
  const test::EnvMap all{{"AWS_ENDPOINT_URL_S3", "http://s3only:9000"},
                         {"AWS_ENDPOINT_URL", "http://any:9000"}};
  CHECK(resolve({.endpoint_url = "http://opt:1"}, all).endpoint.host == "opt");
  CHECK(resolve({}, all).endpoint.host == "s3only");
  CHECK(resolve({}, {{"AWS_ENDPOINT_URL", "http://any:9000"}}).endpoint.host == "any");
  auto e = resolve({}, {}, {{"endpoint_url", "https://ceph.local"}});
  CHECK(e.endpoint.host == "ceph.local");
  CHECK(e.custom_endpoint);
  CHECK(e.endpoint_source == "profile default");
  CHECK(resolve({.region = "eu-north-1"}, {}).endpoint.host == "s3.eu-north-1.amazonaws.com");

  for (const char* bad : {"minio:9000", "http://h/?x=1"}) {
    auto r = net::resolve_endpoint({}, test::env_of({{"AWS_ENDPOINT_URL", bad}}), {});
    INFO(bad);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().to_string().find("AWS_ENDPOINT_URL") != std::string::npos);
  }
}

TEST_CASE("addressing precedence", "[net][s3_endpoint]") {
  CHECK(
      resolve({.addressing = net::Addressing::virtual_hosted}, {{"ONECOPY_S3_ADDRESSING", "path"}})
          .addressing == net::Addressing::virtual_hosted);
  CHECK(resolve({}, {{"ONECOPY_S3_ADDRESSING", "Path"}}, {{"s3.addressing_style", "virtual"}})
            .addressing == net::Addressing::path);
  CHECK(resolve({}, {}, {{"s3.addressing_style", "virtual"}}).addressing ==
        net::Addressing::virtual_hosted);
  CHECK(resolve({}, {}).addressing == net::Addressing::automatic);
  auto r = net::resolve_endpoint({}, test::env_of({{"ONECOPY_S3_ADDRESSING", "sideways"}}), {});
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().to_string().find("ONECOPY_S3_ADDRESSING") != std::string::npos);
}

TEST_CASE("request targets: virtual-hosted on AWS", "[net][s3_endpoint]") {
  const auto e = resolve({.region = "us-west-2"}, {});
  auto t = net::target_for(e, "my-bucket", "dir/a b+c.vortex");
  REQUIRE(t.ok());
  CHECK(t->scheme == "https");
  CHECK(t->tls);
  CHECK(t->host == "my-bucket.s3.us-west-2.amazonaws.com");
  CHECK(t->port == 443);
  CHECK(t->host_header == t->host);
  CHECK(t->path == "/dir/a b+c.vortex");
  CHECK(t->wire_path() == "/dir/a%20b%2Bc.vortex");

  t = net::target_for(e, "my-bucket", "");
  REQUIRE(t.ok());
  CHECK(t->path == "/");

  t = net::target_for(e, "my.dotted.bucket", "k");  // dots break the TLS wildcard: path-style
  REQUIRE(t.ok());
  CHECK(t->host == "s3.us-west-2.amazonaws.com");
  CHECK(t->path == "/my.dotted.bucket/k");
}

TEST_CASE("request targets: path-style on custom endpoints", "[net][s3_endpoint]") {
  auto e = resolve({.endpoint_url = "http://localhost:9000"}, {});
  auto t = net::target_for(e, "bkt", "k/v");
  REQUIRE(t.ok());
  CHECK(t->host == "localhost");
  CHECK(t->port == 9000);
  CHECK(t->host_header == "localhost:9000");
  CHECK(t->path == "/bkt/k/v");
  CHECK_FALSE(t->tls);
  t = net::target_for(e, "bkt", "");
  REQUIRE(t.ok());
  CHECK(t->path == "/bkt");

  e = resolve({.endpoint_url = "https://gw.example.com/s3/"}, {});  // behind a path prefix
  t = net::target_for(e, "bkt", "k");
  REQUIRE(t.ok());
  CHECK(t->path == "/s3/bkt/k");

  e = resolve({.endpoint_url = "http://[::1]:9000", .addressing = net::Addressing::automatic}, {});
  t = net::target_for(e, "bkt", "k");
  REQUIRE(t.ok());
  CHECK(t->host_header == "[::1]:9000");
  CHECK(t->path == "/bkt/k");

  e = resolve({.endpoint_url = "http://minio.local", .addressing = net::Addressing::virtual_hosted},
              {});
  t = net::target_for(e, "bkt", "k");
  REQUIRE(t.ok());
  CHECK(t->host == "bkt.minio.local");
  CHECK(t->host_header == "bkt.minio.local");

  e = resolve({.endpoint_url = "https://s3.eu-west-1.amazonaws.com"}, {});  // AWS's own: virtual
  CHECK(net::target_for(e, "bkt", "k")->host == "bkt.s3.eu-west-1.amazonaws.com");

  e = resolve(
      {.endpoint_url = "http://10.0.0.5:7480", .addressing = net::Addressing::virtual_hosted}, {});
  CHECK(net::target_for(e, "bkt", "k").error().code() == Errc::invalid);
  CHECK(net::target_for(e, "Bad_Bucket", "k").error().code() == Errc::invalid);
  CHECK(net::target_for(e, "bkt", std::string(1025, 'k')).error().code() == Errc::invalid);
}
