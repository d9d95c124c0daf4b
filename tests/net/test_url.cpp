// SPDX-License-Identifier: Apache-2.0
// URL and s3:// URI parsing: defaults, IPv6, queries, and the errors that name their input.
#include <catch2/catch.hpp>

#include "net/url.hpp"

using namespace oc;

TEST_CASE("http and https URLs with default and explicit ports", "[net][url]") {
  auto u = net::parse_url("https://S3.us-west-2.Amazonaws.com");
  REQUIRE(u.ok());
  CHECK(u->scheme == "https");
  CHECK(u->host == "s3.us-west-2.amazonaws.com");
  CHECK(u->port == 443);
  CHECK_FALSE(u->explicit_port);
  CHECK(u->path == "/");
  CHECK(u->host_header() == "s3.us-west-2.amazonaws.com");
  CHECK(u->tls());

  u = net::parse_url("HTTP://localhost:9000/prefix/obj?x=1#frag");
  REQUIRE(u.ok());
  CHECK(u->scheme == "http");
  CHECK(u->port == 9000);
  CHECK(u->path == "/prefix/obj");
  CHECK(u->raw_query == "x=1");
  CHECK(u->host_header() == "localhost:9000");
  CHECK(u->request_target() == "/prefix/obj?x=1");

  u = net::parse_url("http://example.com:80/");
  REQUIRE(u.ok());
  CHECK(u->host_header() == "example.com");  // the default port is not repeated
}

TEST_CASE("IPv6 literals keep their brackets", "[net][url]") {
  auto u = net::parse_url("http://[::1]:8080/b");
  REQUIRE(u.ok());
  CHECK(u->host == "[::1]");
  CHECK(u->port == 8080);
  CHECK(net::is_ip_literal(u->host));
  u = net::parse_url("https://[FD00:EC2::23]");
  REQUIRE(u.ok());
  CHECK(u->host == "[fd00:ec2::23]");
  CHECK(u->port == 443);
  CHECK(net::is_ip_literal("10.0.0.1"));
  CHECK_FALSE(net::is_ip_literal("10.0.0.256"));
  CHECK_FALSE(net::is_ip_literal("example.com"));
}

TEST_CASE("query pairs are decoded in order", "[net][url]") {
  auto u = net::parse_url("https://h/k?b=2&a=x%2Fy&flag&&c=%20+&b=1");
  REQUIRE(u.ok());
  using P = std::pair<std::string, std::string>;
  CHECK(u->query ==
        std::vector<P>{{"b", "2"}, {"a", "x/y"}, {"flag", ""}, {"c", " +"}, {"b", "1"}});
  CHECK(u->raw_query == "b=2&a=x%2Fy&flag&&c=%20+&b=1");
}

TEST_CASE("malformed URLs are invalid and name the input", "[net][url]") {
  for (const char* bad :
       {"s3.amazonaws.com", "ftp://h/", "https://", "https:///path", "http://h:0/",
        "http://h:65536/", "http://h:/", "http://h:12x/", "http://[::1/", "http://[zz]/",
        "http://[::1]x/", "http://user:pw@h/", "http://h/a b", "http://h/a\r\nX: y",
        "http://h/?a=%zz", "http://h/?a=%4", "http://ho st/"}) {
    auto u = net::parse_url(bad);
    INFO(bad);
    REQUIRE_FALSE(u.ok());
    CHECK(u.error().code() == Errc::invalid);
  }
  CHECK(net::parse_url("http://h:99999/").error().message().find("http://h:99999/") !=
        std::string::npos);
}

TEST_CASE("percent decoding", "[net][url]") {
  CHECK(*net::percent_decode("a%2Fb%7e") == "a/b~");
  CHECK(*net::percent_decode("a+b") == "a+b");
  CHECK(*net::percent_decode("a+b", true) == "a b");
  CHECK(net::percent_decode("%").error().code() == Errc::invalid);
  CHECK(net::percent_decode("%g0").error().code() == Errc::invalid);
  CHECK(*net::percent_decode("%00") == std::string(1, '\0'));
}

TEST_CASE("s3 URIs", "[net][url]") {
  auto s = net::parse_s3_uri("s3://my-bucket/dir/file name.vortex");
  REQUIRE(s.ok());
  CHECK(s->bucket == "my-bucket");
  CHECK(s->key == "dir/file name.vortex");  // literal, as the AWS CLI takes it
  s = net::parse_s3_uri("s3://my.bucket");
  REQUIRE(s.ok());
  CHECK(s->key.empty());
  s = net::parse_s3_uri("S3://abc/");
  REQUIRE(s.ok());
  CHECK(s->key.empty());
  s = net::parse_s3_uri("s3://abc/prefix/");
  REQUIRE(s.ok());
  CHECK(s->key == "prefix/");

  for (const char* bad :
       {"s3://", "s3:/x/y", "https://b/k", "s3://ab/k", "s3://Upper/k", "s3://under_score",
        "s3://-dash/k", "s3://dash-/k", "s3://a..b/k", "s3://192.168.1.1/k"}) {
    auto r = net::parse_s3_uri(bad);
    INFO(bad);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code() == Errc::invalid);
  }
  CHECK(net::parse_s3_uri("s3://Upper/k").error().to_string().find("s3://Upper/k") !=
        std::string::npos);
  CHECK(net::check_bucket_name(std::string(63, 'a')).ok());
  CHECK_FALSE(net::check_bucket_name(std::string(64, 'a')).ok());
}

TEST_CASE("redact_url hides the query and user info, and parse errors use it", "[net][url]") {
  using oc::net::redact_url;
  const std::string signed_url =
      "https://b.s3.amazonaws.com/k.vortex?X-Amz-Credential=AKIA%2F&X-Amz-Signature=abc123";
  CHECK(redact_url(signed_url) == "https://b.s3.amazonaws.com/k.vortex?…");
  CHECK(redact_url("http://user:pw@host:81/p?q") == "http://…@host:81/p?…");
  CHECK(redact_url("http://host/plain") == "http://host/plain");
  CHECK(redact_url(redact_url(signed_url)) == redact_url(signed_url));
  auto bad = oc::net::parse_url("https://h/p?X-Amz-Signature=abc123 x");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().to_string().find("abc123") == std::string::npos);
  auto userinfo = oc::net::parse_url("https://me:secret@h/p");
  REQUIRE_FALSE(userinfo.ok());
  CHECK(userinfo.error().to_string().find("secret") == std::string::npos);
}
