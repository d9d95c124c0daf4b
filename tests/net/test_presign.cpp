// SPDX-License-Identifier: Apache-2.0
// Presigned URLs against the S3 documentation's query-parameter example, and their detection.
#include <catch2/catch.hpp>

#include "net/presign.hpp"

using namespace oc;

namespace {

const net::Credentials kExample{"AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                                ""};

net::RequestTarget example_target() {
  net::RequestTarget t;
  t.scheme = "https";
  t.host = t.host_header = "examplebucket.s3.amazonaws.com";
  t.port = 443;
  t.path = "/test.txt";
  t.tls = true;
  return t;
}

net::PresignInput example_input() {
  net::PresignInput in;
  in.amz_date = "20130524T000000Z";
  in.region = "us-east-1";
  in.expires = std::chrono::seconds(86400);
  return in;
}

}  // namespace

TEST_CASE("the S3 documentation's presigned GET", "[net][presign]") {
  auto url = net::presign_url(example_target(), example_input(), kExample);
  REQUIRE(url.ok());
  CHECK(*url ==
        "https://examplebucket.s3.amazonaws.com/test.txt"
        "?X-Amz-Algorithm=AWS4-HMAC-SHA256"
        "&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request"
        "&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host"
        "&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404");
  auto parsed = net::parse_url(*url);
  REQUIRE(parsed.ok());
  CHECK(net::is_presigned(*parsed));
}

TEST_CASE("presigning with a session token, extra query and an encoded key", "[net][presign]") {
  auto t = example_target();
  t.path = "/dir/a b.txt";
  auto in = example_input();
  in.query = {{"response-content-type", "text/plain"}};
  auto url = net::presign_url(t, in, {kExample.access_key, kExample.secret_key, "tok/en+="});
  REQUIRE(url.ok());
  CHECK(url->find("https://examplebucket.s3.amazonaws.com/dir/a%20b.txt?") == 0);
  CHECK(url->find("&X-Amz-Security-Token=tok%2Fen%2B%3D&") != std::string::npos);
  CHECK(url->find("response-content-type=text%2Fplain") != std::string::npos);
  // The token changes the signature: it is signed, not just appended.
  CHECK(url->substr(url->size() - 64) !=
        "aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404");
}

TEST_CASE("presigning rejects bad expiries and missing credentials", "[net][presign]") {
  auto in = example_input();
  in.expires = std::chrono::seconds(0);
  CHECK(net::presign_url(example_target(), in, kExample).error().code() == Errc::invalid);
  in.expires = std::chrono::seconds(604801);
  CHECK(net::presign_url(example_target(), in, kExample).error().code() == Errc::invalid);
  in.expires = std::chrono::seconds(604800);
  CHECK(net::presign_url(example_target(), in, kExample).ok());
  CHECK(net::presign_url(example_target(), example_input(), {}).error().code() == Errc::invalid);
  in.amz_date = "bad";
  CHECK(net::presign_url(example_target(), in, kExample).error().code() == Errc::invalid);
}

TEST_CASE("presigned URL detection", "[net][presign]") {
  CHECK_FALSE(net::is_presigned(*net::parse_url("https://b.s3.amazonaws.com/k?versionId=3")));
  CHECK_FALSE(net::is_presigned(*net::parse_url("https://b.s3.amazonaws.com/k")));
  CHECK(net::is_presigned(*net::parse_url("http://localhost:9000/b/k?X-Amz-Signature=00")));
}
