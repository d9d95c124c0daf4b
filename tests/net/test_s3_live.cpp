// SPDX-License-Identifier: Apache-2.0
// The S3 client against a real server. tests/net/test_s3_servers.py starts Ceph RGW, Swift,
// moto, nginx and the fault-injecting proxy, and runs this executable once per server with:
//   OC_S3_ENDPOINT   http(s)://host:port of the server (or of the fault proxy)
//   OC_S3_BUCKET     an existing, empty bucket
//   OC_S3_STRICT=1   the server verifies signatures (Ceph, Swift), so "[strict]" may run
//   OC_CA_FILE       the test CA, for https endpoints
//   OC_FAULT_PROXY   the fault proxy's control URL, for [faults]
//   OC_BIG_URL       an nginx URL of a sparse file of over 4 GiB, for [big]
//   AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION
#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "net/http_client.hpp"
#include "net/s3_client.hpp"
#include "net/s3_transfer.hpp"
#include "net/url.hpp"

using namespace oc;

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

std::vector<std::byte> pattern(size_t n, uint32_t seed) {
  std::vector<std::byte> v(n);
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (size_t i = 0; i < n; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    v[i] = static_cast<std::byte>(x);
  }
  return v;
}

std::shared_ptr<net::S3Client> make_client(const std::string& endpoint, std::string secret = {},
                                           bool anonymous = false) {
  net::S3Options options;
  options.endpoint_url = endpoint;
  options.region = env("AWS_REGION").empty() ? "us-east-1" : env("AWS_REGION");
  options.addressing = net::Addressing::path;
  auto ep = net::resolve_endpoint(options, net::process_env(), net::SharedConfig{});
  REQUIRE(ep.ok());
  net::S3ClientConfig config;
  config.endpoint = std::move(ep).value();
  if (!env("OC_CA_FILE").empty()) config.tls.ca_file = env("OC_CA_FILE");
  net::CredentialsOptions creds;
  if (anonymous) {
    creds.anonymous = true;
  } else {
    creds.explicit_credentials = net::Credentials{
        env("AWS_ACCESS_KEY_ID"), secret.empty() ? env("AWS_SECRET_ACCESS_KEY") : secret, ""};
  }
  config.credentials =
      std::make_shared<net::CredentialsProvider>(creds, net::process_env(), net::HttpFetch{});
  auto c = net::S3Client::create(std::move(config));
  REQUIRE(c.ok());
  return std::move(c).value();
}

std::shared_ptr<net::S3Client> client() { return make_client(env("OC_S3_ENDPOINT")); }
std::string bucket() { return env("OC_S3_BUCKET"); }

std::string temp_file(const std::vector<std::byte>& bytes) {
  char path[] = "/tmp/onecopy-s3-live-XXXXXX";
  const int fd = ::mkstemp(path);
  REQUIRE(fd >= 0);
  REQUIRE(::write(fd, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size()));
  ::close(fd);
  return path;
}

std::span<const std::byte> sub(const std::vector<std::byte>& v, size_t at, size_t n) {
  return std::span(v).subspan(at, n);
}

bool same(std::span<const std::byte> a, std::span<const std::byte> b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size()) == 0;
}

// Talks to the fault proxy's control endpoint through our own HTTP client.
void fault_control(std::string_view method, std::string_view json = {}) {
  auto url = net::parse_url(env("OC_FAULT_PROXY") + "/__fault__");
  REQUIRE(url.ok());
  net::ConnectOptions o{url->host, url->port, nullptr, net::Clock::now() + std::chrono::seconds(5)};
  auto conn = net::Connection::open(o);
  REQUIRE(conn.ok());
  const std::string target = url->request_target(), host = url->host_header();
  const std::array<net::HeaderField, 1> fields{{{"Content-Type", "application/json"}}};
  net::HttpRequest req{method, target, host, fields, std::as_bytes(std::span(json)), false};
  net::ExchangeProgress progress;
  auto r = net::exchange(**conn, req, {}, net::HttpTimeouts::from_defaults(), progress);
  REQUIRE(r.ok());
  REQUIRE(r->head.status < 300);
}

void add_fault(std::string_view rule) { fault_control("POST", rule); }
void clear_faults() { fault_control("DELETE"); }

}  // namespace

// Shows the error of a failed Result.
#define REQUIRE_MESSAGE_OK(r)                               \
  do {                                                      \
    INFO((r.ok() ? std::string() : r.error().to_string())); \
    REQUIRE(r.ok());                                        \
  } while (0)

TEST_CASE("objects round-trip; ranges across part and stripe boundaries", "[s3]") {
  auto c = client();
  const auto small = pattern(1000, 1);
  REQUIRE(c->put_object(bucket(), "rt/small.bin", small).ok());

  // 20 MiB goes up as a multipart upload of 8 MiB parts (parts end at 8 and 16 MiB; Ceph
  // stripes at 4 MiB).
  const auto big = pattern(20 << 20, 2);
  const std::string path = temp_file(big);
  auto up = net::upload_from_file(*c, path, bucket(), "rt/dir/big object+é.bin");
  ::unlink(path.c_str());
  REQUIRE_MESSAGE_OK(up);
  CHECK(up->multipart);
  CHECK(up->requests == 3);

  auto head = c->head_object(bucket(), "rt/dir/big object+é.bin");
  REQUIRE(head.ok());
  CHECK(head->size == big.size());
  CHECK(!head->etag.empty());

  const size_t MiB = 1 << 20;
  for (auto [at, n] : std::vector<std::pair<size_t, size_t>>{{0, 1},
                                                             {4 * MiB - 7, 14},
                                                             {8 * MiB - 5, 10},
                                                             {16 * MiB - 1, 2},
                                                             {20 * MiB - 1, 1},
                                                             {3 * MiB, 9 * MiB},
                                                             {0, 20 * MiB}}) {
    INFO("range " << at << "+" << n);
    std::vector<std::byte> got(n);
    auto r = c->get_range(bucket(), "rt/dir/big object+é.bin", at, got, head->etag);
    REQUIRE(r.ok());
    CHECK(r->object_size == big.size());
    CHECK(same(got, sub(big, at, n)));
  }
  std::vector<std::byte> got(small.size());
  REQUIRE(c->get_range(bucket(), "rt/small.bin", 0, got).ok());
  CHECK(same(got, small));

  // The whole object through the parallel download path, into a file.
  char out[] = "/tmp/onecopy-s3-live-dl-XXXXXX";
  ::close(::mkstemp(out));
  auto down =
      net::download_to_file(*c, net::ObjectRef{bucket(), "rt/dir/big object+é.bin", ""}, out);
  REQUIRE(down.ok());
  std::ifstream f(out, std::ios::binary);
  std::vector<char> back((std::istreambuf_iterator<char>(f)), {});
  ::unlink(out);
  CHECK(same(std::as_bytes(std::span(back)), big));

  // Bodies are received in place: only bytes that arrived with a response head were copied.
  const auto& k = c->counters();
  CHECK(k.bytes_received.load() >= 2 * big.size());
  CHECK(k.copied_bytes.load() < k.bytes_received.load() / 100);
}

TEST_CASE("missing objects and ranges past the end are clear errors", "[s3]") {
  auto c = client();
  auto head = c->head_object(bucket(), "nothing/here");
  REQUIRE(!head.ok());
  CHECK(head.error().code() == Errc::not_found);
  std::vector<std::byte> buf(10);
  auto get = c->get_range(bucket(), "nothing/here", 0, buf);
  REQUIRE(!get.ok());
  CHECK(get.error().code() == Errc::not_found);
  CHECK_THAT(get.error().to_string(), Catch::Contains("s3://" + bucket() + "/nothing/here"));

  REQUIRE(c->put_object(bucket(), "short.bin", pattern(100, 3)).ok());
  std::vector<std::byte> twenty(20);
  auto past = c->get_range(bucket(), "short.bin", 90, twenty);
  REQUIRE(!past.ok());
  CHECK_THAT(past.error().to_string(), Catch::Contains("100-byte object"));
  auto beyond = c->get_range(bucket(), "short.bin", 200, buf);
  REQUIRE(!beyond.ok());
  CHECK_THAT(beyond.error().to_string(), Catch::Contains("416"));
}

TEST_CASE("listings paginate, with prefixes and delimiters", "[s3]") {
  auto c = client();
  for (int i = 0; i < 23; ++i) {
    REQUIRE(c->put_object(bucket(), fmt::format("list/k{:02}", i), pattern(10, i)).ok());
  }
  REQUIRE(c->put_object(bucket(), "list/sub/a", pattern(1, 0)).ok());
  REQUIRE(c->put_object(bucket(), "list/sub/b", pattern(1, 0)).ok());

  auto first = c->list_page(bucket(), "list/", "", "", 10);
  REQUIRE(first.ok());
  CHECK(first->contents.size() == 10);
  CHECK(first->is_truncated);
  CHECK(!first->next_continuation_token.empty());
  auto second = c->list_page(bucket(), "list/", "", first->next_continuation_token, 10);
  REQUIRE(second.ok());
  CHECK(second->contents.front().key > first->contents.back().key);

  auto all = c->list_all(bucket(), "list/", "");
  REQUIRE(all.ok());
  CHECK(all->contents.size() == 25);
  auto shallow = c->list_all(bucket(), "list/", "/");
  REQUIRE(shallow.ok());
  CHECK(shallow->contents.size() == 23);
  REQUIRE(shallow->common_prefixes.size() == 1);
  CHECK(shallow->common_prefixes[0] == "list/sub/");
  CHECK(shallow->contents[5].size == 10);
}

TEST_CASE("multipart uploads can be aborted", "[s3]") {
  auto c = client();
  auto id = c->create_multipart(bucket(), "mp/aborted");
  REQUIRE(id.ok());
  const auto part = pattern(5 << 20, 9);
  auto etag = c->upload_part(bucket(), "mp/aborted", *id, 1, part);
  REQUIRE(etag.ok());
  REQUIRE(c->abort_multipart(bucket(), "mp/aborted", *id).ok());
  const net::CompletedPart parts[] = {{1, *etag}};
  auto done = c->complete_multipart(bucket(), "mp/aborted", *id, parts);
  // Servers disagree on the error (404 NoSuchUpload; moto and Ceph 500), not on the outcome.
  REQUIRE(!done.ok());
  CHECK(c->head_object(bucket(), "mp/aborted").error().code() == Errc::not_found);
}

TEST_CASE("presigned URLs are generated and consumed", "[s3]") {
  auto c = client();
  const auto data = pattern(5000, 4);
  REQUIRE(c->put_object(bucket(), "presigned/obj", data).ok());
  auto url = c->presign_get(bucket(), "presigned/obj", std::chrono::seconds(600));
  REQUIRE(url.ok());
  CHECK_THAT(*url, Catch::Contains("X-Amz-Signature="));
  // A client with no credentials at all reads through the URL alone.
  auto anon = make_client(env("OC_S3_ENDPOINT"), {}, /*anonymous=*/true);
  auto info = anon->stat_url(*url);
  REQUIRE(info.ok());
  CHECK(info->size == data.size());
  std::vector<std::byte> got(1000);
  REQUIRE(anon->get_url_range(*url, 4000, got).ok());
  CHECK(same(got, sub(data, 4000, 1000)));
}

// ---- servers that verify signatures ([strict]) ------------------------------------------------
// A lenient server (moto) accepts any signature, so these cases are tagged apart and
// tests/net/test_s3_servers.py selects them for Ceph and Swift only. Run against a server not
// marked strict, they fail rather than pass without checking anything.

namespace {

void require_strict_server() {
  INFO("OC_S3_STRICT=1 marks a server that verifies signatures; run \"[strict]\" only against one");
  REQUIRE(env("OC_S3_STRICT") == "1");
}

}  // namespace

TEST_CASE("a forged presigned URL is refused with a 403", "[strict]") {
  require_strict_server();
  auto c = client();
  REQUIRE(c->put_object(bucket(), "presigned/forged", pattern(5000, 5)).ok());
  auto url = c->presign_get(bucket(), "presigned/forged", std::chrono::seconds(600));
  REQUIRE(url.ok());
  std::string forged = *url;
  forged.back() = forged.back() == '0' ? '1' : '0';  // the last character of X-Amz-Signature
  auto anon = make_client(env("OC_S3_ENDPOINT"), {}, /*anonymous=*/true);
  std::vector<std::byte> got(1000);
  auto bad = anon->get_url_range(forged, 0, got);
  REQUIRE(!bad.ok());
  CHECK_THAT(bad.error().to_string(), Catch::Contains("403"));
}

TEST_CASE("wrong credentials fail with a clear 403 that hides the secret", "[strict]") {
  require_strict_server();
  const std::string wrong = "wrongsecretwrongsecretwrongsecret123";
  auto c = make_client(env("OC_S3_ENDPOINT"), wrong);
  auto r = c->list_page(bucket(), "", "", "");
  REQUIRE(!r.ok());
  const std::string msg = r.error().to_string();
  CHECK_THAT(msg, Catch::Contains("HTTP 403"));
  CHECK_THAT(msg, Catch::Contains("SignatureDoesNotMatch") || Catch::Contains("AccessDenied"));
  CHECK_THAT(msg, Catch::Contains("check the credentials"));
  CHECK(msg.find(wrong) == std::string::npos);
  CHECK(c->counters().retries.load() == 0);  // a 403 is final
}

TEST_CASE("faults end in a retried success or a clear error, never wrong bytes", "[faults]") {
  auto c = client();
  const auto data = pattern(4 << 20, 7);
  REQUIRE(c->put_object(bucket(), "faults/obj", data).ok());
  auto head = c->head_object(bucket(), "faults/obj");
  REQUIRE(head.ok());

  auto read_all = [&](std::string_view etag = {}) {
    std::vector<std::byte> got(data.size());
    auto r = c->get_range(bucket(), "faults/obj", 0, got, etag);
    if (r.ok()) REQUIRE(same(got, data));
    return r;
  };
  struct Case {
    const char* rule;
    bool succeeds;
    const char* error_text;
  };
  const Case cases[] = {
      {R"({"fault":"reset_mid_body","range":true})", true, ""},
      {R"({"fault":"truncate_body","range":true})", true, ""},
      {R"({"fault":"stall","range":true,"seconds":5,"then":"close"})", true, ""},
      {R"({"fault":"status_burst","count":3,"status":503})", true, ""},
      {R"({"fault":"status_burst","count":-1,"status":503})", false, "503 SlowDown"},
      {R"({"fault":"wrong_content_range","range":true})", true, ""},
      {R"({"fault":"wrong_content_range","range":true,"count":-1})", false, "Content-Range"},
  };
  for (const auto& k : cases) {
    INFO(k.rule);
    clear_faults();
    add_fault(k.rule);
    const uint64_t retries = c->counters().retries.load();
    auto r = read_all();
    CHECK(r.ok() == k.succeeds);
    if (k.succeeds) {
      CHECK(c->counters().retries.load() > retries);
    } else {
      REQUIRE(!r.ok());
      CHECK_THAT(r.error().to_string(), Catch::Contains(k.error_text));
      CHECK_THAT(r.error().to_string(), Catch::Contains("bytes=0-4194303"));
    }
  }

  // A broken body resumes from its first missing byte instead of starting over.
  clear_faults();
  add_fault(R"({"fault":"reset_mid_body","range":true,"fraction":0.5})");
  const uint64_t before = c->counters().bytes_received.load();
  REQUIRE(read_all().ok());
  CHECK(c->counters().bytes_received.load() - before == data.size());

  // A straggler is hedged (ONECOPY_S3_HEDGE_AFTER_MS, set by the test driver): the re-issued
  // request wins long before the stalled one would have finished.
  clear_faults();
  add_fault(R"({"fault":"stall","range":true,"seconds":20,"fraction":0.25})");
  {
    std::vector<std::byte> got(data.size());
    const net::RangeFetch halves[] = {{0, std::span(got).first(data.size() / 2)},
                                      {data.size() / 2, std::span(got).subspan(data.size() / 2)}};
    const auto t0 = net::Clock::now();
    const uint64_t won = c->counters().hedges_won.load();
    REQUIRE(c->fetch_ranges(net::ObjectRef{bucket(), "faults/obj", ""}, head->etag, halves).ok());
    CHECK(net::Clock::now() - t0 < std::chrono::seconds(10));
    CHECK(c->counters().hedges_won.load() >= won + 1);  // slow moto may get the other hedged too
    CHECK(same(got, data));
  }

  // The object "changes" after the first read: reads pinned to the first ETag must fail.
  clear_faults();
  add_fault(R"({"fault":"etag_change","after":1})");
  auto first = read_all();
  REQUIRE(first.ok());
  auto second = read_all(first->etag);
  REQUIRE(!second.ok());
  CHECK(second.error().code() == Errc::corrupt);
  CHECK_THAT(second.error().to_string(), Catch::Contains("changed"));
  clear_faults();
}

TEST_CASE("ranges past 4 GiB", "[big]") {
  auto c = make_client("http://unused.invalid", {}, /*anonymous=*/true);
  const std::string url = env("OC_BIG_URL");
  auto info = c->stat_url(url);
  REQUIRE(info.ok());
  CHECK(info->size > (uint64_t{4} << 30));
  // The file is sparse except for bytes 1..64 written at 4 GiB - 32.
  const uint64_t at = (uint64_t{4} << 30) - 64;
  std::vector<std::byte> got(128);
  REQUIRE(c->get_url_range(url, at, got).ok());
  for (size_t i = 0; i < got.size(); ++i) {
    const int want = i >= 32 && i < 96 ? static_cast<int>(i - 31) : 0;
    INFO("byte " << i);
    REQUIRE(static_cast<int>(got[i]) == want);
  }
  std::vector<std::byte> tail(4096);
  REQUIRE(c->get_url_range(url, info->size - tail.size(), tail).ok());
}
