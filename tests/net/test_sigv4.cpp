// SPDX-License-Identifier: Apache-2.0
// SigV4 against the published vectors: the S3 API reference's "Examples: Signature
// Calculations" (examplebucket, 20130524) and aws-c-auth's get-vanilla case.
#include <catch2/catch.hpp>

#include "net/sigv4.hpp"

using namespace oc;

namespace {
const net::Credentials kS3Example{"AKIAIOSFODNN7EXAMPLE",
                                  "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", ""};
constexpr std::string_view kEmptyHash =
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

std::string hash_of(std::string_view s) {
  return net::sha256_hex({reinterpret_cast<const uint8_t*>(s.data()), s.size()});
}

net::SigningInput s3_get(std::string_view path) {
  net::SigningInput in;
  in.method = "GET";
  in.path = path;
  in.payload_hash = kEmptyHash;
  in.amz_date = "20130524T000000Z";
  in.region = "us-east-1";
  in.headers = {{"Host", "examplebucket.s3.amazonaws.com"},
                {"x-amz-content-sha256", std::string(kEmptyHash)},
                {"x-amz-date", "20130524T000000Z"}};
  return in;
}
}  // namespace

TEST_CASE("sha256 of the empty body", "[net][sigv4]") { CHECK(hash_of("") == kEmptyHash); }

TEST_CASE("S3 GET object with a range", "[net][sigv4]") {
  auto in = s3_get("/test.txt");
  in.headers.emplace_back("Range", "bytes=0-9");
  auto s = net::sign_v4(in, kS3Example);
  REQUIRE(s.ok());
  CHECK(s->signed_headers == "host;range;x-amz-content-sha256;x-amz-date");
  CHECK(hash_of(s->canonical_request) ==
        "7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972");
  CHECK(s->signature == "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
  CHECK(s->authorization ==
        "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
        "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
        "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
}

TEST_CASE("S3 PUT object with a payload hash and an encoded path", "[net][sigv4]") {
  net::SigningInput in;
  in.method = "PUT";
  in.path = "/test$file.text";
  const std::string body_hash = hash_of("Welcome to Amazon S3.");
  in.payload_hash = body_hash;
  in.amz_date = "20130524T000000Z";
  in.region = "us-east-1";
  in.headers = {{"Host", "examplebucket.s3.amazonaws.com"},
                {"Date", "Fri, 24 May 2013 00:00:00 GMT"},
                {"x-amz-date", "20130524T000000Z"},
                {"x-amz-storage-class", "REDUCED_REDUNDANCY"},
                {"x-amz-content-sha256", body_hash}};
  auto s = net::sign_v4(in, kS3Example);
  REQUIRE(s.ok());
  CHECK(s->canonical_request.find("/test%24file.text\n") != std::string::npos);
  CHECK(s->signature == "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd");
}

TEST_CASE("S3 GET with query parameters", "[net][sigv4]") {
  auto lifecycle = s3_get("/");
  lifecycle.query = {{"lifecycle", ""}};
  auto s = net::sign_v4(lifecycle, kS3Example);
  REQUIRE(s.ok());
  CHECK(s->signature == "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543");

  auto list = s3_get("/");
  list.query = {{"prefix", "J"}, {"max-keys", "2"}};  // sorted by the signer
  s = net::sign_v4(list, kS3Example);
  REQUIRE(s.ok());
  CHECK(s->signature == "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7");
}

TEST_CASE("aws-c-auth get-vanilla", "[net][sigv4]") {
  net::SigningInput in;
  in.method = "GET";
  in.path = "/";
  in.payload_hash = kEmptyHash;
  in.amz_date = "20150830T123600Z";
  in.region = "us-east-1";
  in.service = "service";
  in.headers = {{"Host", "example.amazonaws.com"}, {"X-Amz-Date", "20150830T123600Z"}};
  auto s = net::sign_v4(in, {"AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", ""});
  REQUIRE(s.ok());
  CHECK(s->signature == "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31");
}

TEST_CASE("signing rejects a malformed date or a missing host", "[net][sigv4]") {
  auto in = s3_get("/x");
  in.amz_date = "2013-05-24";
  CHECK(net::sign_v4(in, kS3Example).error().code() == Errc::invalid);
  in = s3_get("/x");
  in.headers.erase(in.headers.begin());
  CHECK(net::sign_v4(in, kS3Example).error().code() == Errc::invalid);
  CHECK(net::uri_encode("a b/c~", true) == "a%20b/c~");
  CHECK(net::uri_encode("a b/c~", false) == "a%20b%2Fc~");
}
