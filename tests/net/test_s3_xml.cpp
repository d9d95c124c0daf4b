// SPDX-License-Identifier: Apache-2.0
// S3 XML bodies shaped like AWS, MinIO/moto and Ceph responses, and malformed ones.
#include <catch2/catch.hpp>

#include "net/s3_xml.hpp"

using namespace oc;

TEST_CASE("ListObjectsV2, AWS-shaped, truncated", "[net][s3_xml]") {
  const char* xml = R"(<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
  <Name>bucket</Name><Prefix>data/</Prefix><KeyCount>2</KeyCount><MaxKeys>2</MaxKeys>
  <Delimiter>/</Delimiter><IsTruncated>true</IsTruncated>
  <Contents>
    <Key>data/a&amp;b.vortex</Key><LastModified>2026-01-02T03:04:05.000Z</LastModified>
    <ETag>&quot;9b2cf535f27731c974343645a3985328&quot;</ETag><Size>434234</Size>
    <StorageClass>STANDARD</StorageClass>
  </Contents>
  <Contents>
    <Key>data/empty</Key><LastModified>2026-01-02T03:04:06.000Z</LastModified>
    <ETag>"d41d8cd98f00b204e9800998ecf8427e-2"</ETag><Size>0</Size>
  </Contents>
  <CommonPrefixes><Prefix>data/sub/</Prefix></CommonPrefixes>
  <NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=</NextContinuationToken>
</ListBucketResult>)";
  auto page = net::parse_list_objects_v2(xml);
  REQUIRE(page.ok());
  REQUIRE(page->contents.size() == 2);
  CHECK(page->contents[0].key == "data/a&b.vortex");
  CHECK(page->contents[0].size == 434234);
  CHECK(page->contents[0].etag == "\"9b2cf535f27731c974343645a3985328\"");
  CHECK(page->contents[0].last_modified == "2026-01-02T03:04:05.000Z");
  CHECK(page->contents[1].size == 0);
  CHECK(page->common_prefixes == std::vector<std::string>{"data/sub/"});
  CHECK(page->is_truncated);
  CHECK(page->next_continuation_token == "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=");
  CHECK(page->key_count == 2u);
}

TEST_CASE("ListObjectsV2, last page, no namespace, url encoding", "[net][s3_xml]") {
  // Ceph RGW omits KeyCount on some versions; moto sends EncodingType when asked.
  auto page = net::parse_list_objects_v2(
      "<ListBucketResult><Name>b</Name><EncodingType>url</EncodingType><IsTruncated>false</"
      "IsTruncated>"
      "<Contents><Key>dir/a+b%2Bc%E2%82%AC</Key><Size>1</Size></Contents>"
      "<CommonPrefixes><Prefix>x%20y/</Prefix></CommonPrefixes></ListBucketResult>");
  REQUIRE(page.ok());
  CHECK(page->contents.at(0).key == "dir/a b+c\xE2\x82\xAC");
  CHECK(page->common_prefixes.at(0) == "x y/");
  CHECK_FALSE(page->is_truncated);
  CHECK_FALSE(page->key_count.has_value());

  page = net::parse_list_objects_v2(
      R"(<s3:ListBucketResult xmlns:s3="http://s3.amazonaws.com/doc/2006-03-01/"><s3:KeyCount>0</s3:KeyCount>
         <s3:IsTruncated>false</s3:IsTruncated></s3:ListBucketResult>)");
  REQUIRE(page.ok());
  CHECK(page->contents.empty());
  CHECK(page->key_count == 0u);
}

TEST_CASE("malformed listings are protocol errors naming what was expected", "[net][s3_xml]") {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "<ListBucketResult>"},
      {"<ListBucketResult><Contents><Key>a</Key>", "malformed"},
      {"<Other/>", "got <Other>"},
      {"<ListBucketResult><Contents><Key>a</Key><Size>-1</Size></Contents></ListBucketResult>",
       "<Size>"},
      {"<ListBucketResult><Contents><Key>a</Key></Contents></ListBucketResult>", "<Size>"},
      {"<ListBucketResult><Contents><Size>1</Size></Contents></ListBucketResult>", "<Key>"},
      {"<ListBucketResult><IsTruncated>yes</IsTruncated></ListBucketResult>", "<IsTruncated>"},
      {"<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>",
       "<NextContinuationToken>"},
      {"<ListBucketResult><KeyCount>x</KeyCount></ListBucketResult>", "<KeyCount>"},
      {"<ListBucketResult><EncodingType>url</EncodingType><Contents><Key>%zz</Key><Size>1</Size></"
       "Contents>"
       "</ListBucketResult>",
       "URL-encoded"},
      {"<Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>",
       "AccessDenied: Access Denied"},
  };
  for (const auto& [xml, needle] : cases) {
    auto page = net::parse_list_objects_v2(xml);
    INFO(xml);
    REQUIRE_FALSE(page.ok());
    CHECK(page.error().code() == Errc::protocol);
    CHECK(page.error().message().find(needle) != std::string::npos);
  }
}

TEST_CASE("S3 error bodies", "[net][s3_xml]") {
  auto e = net::parse_s3_error(R"(<?xml version="1.0" encoding="UTF-8"?>
<Error><Code>NoSuchKey</Code><Message>The resource you requested does not exist</Message>
<Resource>/mybucket/myfoto.jpg</Resource><RequestId>4442587FB7D0A2F9</RequestId></Error>)");
  REQUIRE(e.ok());
  CHECK(e->code == "NoSuchKey");
  CHECK(e->message == "The resource you requested does not exist");
  CHECK(e->resource == "/mybucket/myfoto.jpg");
  CHECK(e->request_id == "4442587FB7D0A2F9");

  e = net::parse_s3_error("<Error><Code>SlowDown</Code></Error>");  // sparse, as Ceph may send
  REQUIRE(e.ok());
  CHECK(e->message.empty());
  CHECK(net::parse_s3_error("<html>502 Bad Gateway</html>").error().code() == Errc::protocol);
  CHECK(net::parse_s3_error("not xml <").error().code() == Errc::protocol);
}

TEST_CASE("multipart results", "[net][s3_xml]") {
  auto id = net::parse_initiate_multipart(R"(<?xml version="1.0" encoding="UTF-8"?>
<InitiateMultipartUploadResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
  <Bucket>example-bucket</Bucket><Key>example-object</Key>
  <UploadId>VXBsb2FkIElEIGZvciA2aWWpbmcncyBteS1tb3ZpZS5tMnRzIHVwbG9hZA</UploadId>
</InitiateMultipartUploadResult>)");
  REQUIRE(id.ok());
  CHECK(*id == "VXBsb2FkIElEIGZvciA2aWWpbmcncyBteS1tb3ZpZS5tMnRzIHVwbG9hZA");
  CHECK(net::parse_initiate_multipart("<InitiateMultipartUploadResult/>").error().code() ==
        Errc::protocol);

  auto done = net::parse_complete_multipart(R"(<?xml version="1.0" encoding="UTF-8"?>
<CompleteMultipartUploadResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
  <Location>http://Example-Bucket.s3.amazonaws.com/Example-Object</Location>
  <Bucket>Example-Bucket</Bucket><Key>Example-Object</Key>
  <ETag>"3858f62230ac3c915f300c664312c11f-9"</ETag>
</CompleteMultipartUploadResult>)");
  REQUIRE(done.ok());
  CHECK(done->etag == "\"3858f62230ac3c915f300c664312c11f-9\"");
  CHECK(done->location == "http://Example-Bucket.s3.amazonaws.com/Example-Object");

  // S3 may report a failed completion with 200 and an <Error> body.
  auto failed = net::parse_complete_multipart(
      "<Error><Code>InternalError</Code><Message>We encountered an internal "
      "error.</Message></Error>");
  REQUIRE_FALSE(failed.ok());
  CHECK(failed.error().code() == Errc::io);
  CHECK(failed.error().message().find("InternalError") != std::string::npos);
  // Ceph Pacific sends an empty <ETag/>: still a completed upload.
  auto empty = net::parse_complete_multipart("<CompleteMultipartUploadResult/>");
  REQUIRE(empty.ok());
  CHECK(empty->etag.empty());
  CHECK(net::parse_complete_multipart("<<").error().code() == Errc::protocol);
}

TEST_CASE("CompleteMultipartUpload request body", "[net][s3_xml]") {
  const std::vector<net::CompletedPart> parts = {{1, "\"a54357aff0632cce46d942af68356b38\""},
                                                 {2, "<&>"}};
  auto body = net::complete_multipart_body(parts);
  REQUIRE(body.ok());
  CHECK(*body ==
        "<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
        "<Part><PartNumber>1</PartNumber><ETag>\"a54357aff0632cce46d942af68356b38\"</ETag></Part>"
        "<Part><PartNumber>2</PartNumber><ETag>&lt;&amp;&gt;</ETag></Part></"
        "CompleteMultipartUpload>");

  CHECK(net::complete_multipart_body({}).error().code() == Errc::invalid);
  const std::vector<net::CompletedPart> zero = {{0, "x"}};
  CHECK(net::complete_multipart_body(zero).error().code() == Errc::invalid);
  const std::vector<net::CompletedPart> descending = {{2, "x"}, {1, "y"}};
  CHECK(net::complete_multipart_body(descending).error().code() == Errc::invalid);
  const std::vector<net::CompletedPart> too_many = {{10001, "x"}};
  CHECK(net::complete_multipart_body(too_many).error().code() == Errc::invalid);
}

TEST_CASE("hostile XML does not crash", "[net][s3_xml]") {
  const std::string bomb =
      "<!DOCTYPE lolz [<!ENTITY lol \"lol\"><!ENTITY lol2 \"&lol;&lol;&lol;&lol;\">]>"
      "<ListBucketResult><Contents><Key>&lol2;</Key><Size>1</Size></Contents></ListBucketResult>";
  auto page = net::parse_list_objects_v2(bomb);
  if (page.ok()) CHECK(page->contents.at(0).key.size() < 64);  // entities are not expanded
  std::string deep;
  for (int i = 0; i < 20000; ++i) deep += "<a>";
  std::string bytes;
  for (int i = 0; i < 4096; ++i) bytes += static_cast<char>((i * 37 + 11) % 256);
  for (const std::string& xml : {deep, bytes, std::string("\0<Error/>", 9)}) {
    net::fuzz_parse_s3_xml({reinterpret_cast<const uint8_t*>(xml.data()), xml.size()});
  }
}
