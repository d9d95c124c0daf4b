// SPDX-License-Identifier: Apache-2.0
#include "net/s3_client.hpp"

#include <openssl/evp.h>
#include <time.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <random>

#include "config/defaults.hpp"
#include "config/log.hpp"
#include "net/content_range.hpp"
#include "net/http_fetch.hpp"
#include "net/presign.hpp"
#include "net/reactor.hpp"
#include "net/scheduler.hpp"
#include "net/sigv4.hpp"
#include "net/url.hpp"

namespace oc::net {
namespace {

constexpr std::string_view kUnsignedPayload = "UNSIGNED-PAYLOAD";

std::string amz_date_now() {
  const time_t now = time(nullptr);
  tm utc{};
  gmtime_r(&now, &utc);
  char buf[17];
  strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &utc);
  return buf;
}

void store_max(std::atomic<uint64_t>& a, uint64_t v) {
  uint64_t cur = a.load();
  while (v > cur && !a.compare_exchange_weak(cur, v)) {
  }
}

// "bytes 0-9/443" (RFC 9110 §14.4). @return first, last and the complete length.
bool retryable_status(int status) { return status >= 500 || status == 429; }

// Full jitter (AWS Architecture Blog, "Exponential Backoff And Jitter"): uniform in
// [0, min(cap, base * 2^attempt)], which spreads retries of many clients apart.
std::chrono::milliseconds backoff(uint32_t attempt) {
  const Defaults& d = defaults();
  const uint64_t ceiling = std::min<uint64_t>(
      d.s3_backoff_max_ms, uint64_t{d.s3_backoff_base_ms} << std::min<uint32_t>(attempt, 20));
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return std::chrono::milliseconds(std::uniform_int_distribution<uint64_t>(0, ceiling)(rng));
}

// The S3 error code of a response body ("NoSuchKey"), or a placeholder. Only the code goes into
// errors: the body is the store's text (a proxy's page, a message naming internal hosts), and
// errors travel to onecopyd's clients; the whole body is logged at debug level.
std::string error_code_of(std::string_view text) {
  auto e = parse_s3_error(text);
  const bool token = e.ok() && !e->code.empty() && e->code.size() <= 64 &&
                     std::all_of(e->code.begin(), e->code.end(), [](char c) {
                       return std::isalnum(static_cast<unsigned char>(c)) || c == '.';
                     });
  return token ? e->code : "(no S3 error code)";
}

// The ETag S3 gives an object completed from @p parts: the MD5 of the parts' binary MD5s, then
// "-" and the part count (a fact of S3 and its clones, not a documented contract; a part whose
// ETag is not an MD5, as with SSE-KMS, gives none).
std::optional<std::string> multipart_etag(std::span<const CompletedPart> parts) {
  std::string digests;
  for (const CompletedPart& p : parts) {
    std::string_view hex = p.etag;
    if (hex.size() >= 2 && hex.front() == '"' && hex.back() == '"')
      hex = hex.substr(1, hex.size() - 2);
    if (hex.size() != 32) return std::nullopt;
    for (size_t i = 0; i < 32; i += 2) {
      unsigned byte = 0;
      auto [end, ec] = std::from_chars(hex.data() + i, hex.data() + i + 2, byte, 16);
      if (ec != std::errc() || end != hex.data() + i + 2) return std::nullopt;
      digests.push_back(static_cast<char>(byte));
    }
  }
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_Digest(digests.data(), digests.size(), md, &len, EVP_md5(), nullptr) != 1)
    return std::nullopt;
  std::string out = "\"";
  for (unsigned i = 0; i < len; ++i) out += fmt::format("{:02x}", md[i]);
  return out + fmt::format("-{}\"", parts.size());
}

}  // namespace

// One logical request: what to send, where the body goes, and what has been achieved so far.
struct S3Client::Call {
  explicit Call(std::string_view m, std::string_view b = {}, std::string_view k = {})
      : method(m), bucket(b), key(k) {}

  std::string_view method;
  std::string_view bucket, key;
  std::vector<std::pair<std::string, std::string>> query;    // unencoded
  std::vector<std::pair<std::string, std::string>> headers;  // beyond the signed basics
  std::span<const std::byte> body;
  std::span<std::byte> dest;
  bool head_only = false;
  bool expect_continue = false;
  std::optional<Url> presigned;  // send this URL as is, unsigned
  bool public_only = false;      // for `presigned`: public addresses only
  // Ranged GETs: [offset, offset + dest.size()), resumed from `done` after a broken body.
  std::optional<uint64_t> offset;
  uint64_t done = 0;
  std::string etag;  // If-Match once known
  uint64_t object_size = 0;
  CancelToken* cancel = nullptr;
  // False for requests whose repetition is not harmless (CreateMultipartUpload creates another
  // upload, CompleteMultipartUpload may have completed): not resent once the request went out.
  bool idempotent = true;
  // Set when the credentials chain failed: nothing was sent, and a retry would find none either.
  bool no_credentials = false;
  std::span<const RangeFetch> parts;  // a multi-range GET (URL objects): one slot per range
  RequestStats stats;

  [[nodiscard]] std::string describe() const {
    std::string s = presigned ? fmt::format("{} {}", method, redact_url(presigned->original))
                              : fmt::format("{} s3://{}/{}", method, bucket, key);
    if (offset) s += fmt::format(" bytes={}-{}", *offset, *offset + dest.size() - 1);
    if (!parts.empty()) {
      s += fmt::format(" {} ranges in bytes={}-{}", parts.size(), parts.front().offset,
                       parts.back().offset + parts.back().dest.size() - 1);
    }
    return s;
  }
};

namespace {

// Every response of a logical request comes from one version of the object: the first ETag seen
// (or the one the caller pinned) must be the ETag of every later attempt's response.
// A listing's ETag and a response header's may differ in their quotes only.
std::string_view unquoted(std::string_view etag) {
  if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"') {
    return etag.substr(1, etag.size() - 2);
  }
  return etag;
}

Result<void> pin_etag(std::string& pinned, const ResponseHead& h) {
  const std::string* etag = h.find("etag");
  if (!pinned.empty()) {
    OC_EXPECT(etag && unquoted(*etag) == unquoted(pinned), corrupt,
              "object changed while being read: ETag {} became {}", pinned,
              etag ? *etag : "(none)");
  } else if (etag) {
    pinned = *etag;
  }
  return {};
}

}  // namespace

// ---- CancelToken
// ---------------------------------------------------------------------------------

void CancelToken::cancel() {
  cancelled_ = true;
  std::lock_guard lock(mu_);
  if (active_) active_->abort();
}

void CancelToken::attach(Connection* c) {
  std::lock_guard lock(mu_);
  active_ = c;
  if (c && cancelled_) c->abort();
}

// ---- construction
// --------------------------------------------------------------------------------

Result<S3ClientConfig> S3ClientConfig::from_environment() {
  S3ClientConfig c;
  const GetEnv env = process_env();
  OC_ASSIGN_OR_RETURN(SharedConfig shared, load_shared_config(env));
  OC_ASSIGN_OR_RETURN(c.endpoint, resolve_endpoint(S3Options{}, env, shared));
  // The chain runs on the first signed request, so URL-only use needs no credentials at all.
  OC_ASSIGN_OR_RETURN(auto tls, TlsContext::create(c.tls));
  c.credentials = std::make_shared<CredentialsProvider>(CredentialsOptions{}, env,
                                                        make_http_fetch(std::move(tls)));
  return c;
}

S3Client::S3Client(S3ClientConfig config) : config_(std::move(config)) {}
S3Client::~S3Client() = default;

Result<std::shared_ptr<S3Client>> S3Client::create(S3ClientConfig config) {
  std::shared_ptr<TlsContext> tls;
  OC_ASSIGN_OR_RETURN(tls, TlsContext::create(config.tls));
  std::shared_ptr<S3Client> c(new S3Client(std::move(config)));
  const uint32_t per_endpoint = c->config_.connections_per_endpoint != 0
                                    ? c->config_.connections_per_endpoint
                                    : defaults().http_connections_per_endpoint;
  c->pool_ = std::make_unique<ConnectionPool>(std::move(tls), per_endpoint);
  return c;
}

// ---- the request engine
// --------------------------------------------------------------------------

Result<HttpResponse> S3Client::attempt(Call& call, ExchangeProgress& progress, bool& reused) {
  // Where the request goes and what its target line is.
  EndpointKey where;
  std::string host_header, target;
  std::vector<std::pair<std::string, std::string>> headers = call.headers;
  if (call.offset) {
    const uint64_t from = *call.offset + call.done;
    headers.emplace_back("range",
                         fmt::format("bytes={}-{}", from, *call.offset + call.dest.size() - 1));
  }
  if (!call.parts.empty()) headers.emplace_back("range", byte_ranges_header(call.parts));
  if (!call.etag.empty()) headers.emplace_back("if-match", call.etag);

  if (call.presigned) {
    const Url& u = *call.presigned;
    where = {u.host, u.port, u.scheme == "https", call.public_only};
    host_header = u.host_header();
    target = u.request_target();
  } else {
    OC_ASSIGN_OR_RETURN(RequestTarget t, target_for(config_.endpoint, call.bucket, call.key));
    where = {t.host, t.port, t.tls};
    host_header = t.host_header;
    target = t.wire_path();
    for (size_t i = 0; i < call.query.size(); ++i) {
      const auto& [k, v] = call.query[i];
      target += i == 0 ? '?' : '&';
      target += uri_encode(k, false);
      if (!v.empty() || k != "uploads") {
        target += '=';
        target += uri_encode(v, false);
      }
    }
    std::optional<ResolvedCredentials> resolved;
    if (config_.credentials) {
      auto got = config_.credentials->get();
      if (!got.ok()) {
        call.no_credentials = true;
        return std::move(got).error();
      }
      resolved = std::move(got).value();
    }
    if (resolved && !resolved->anonymous) {
      const Credentials& creds = resolved->credentials;
      const std::string payload_hash =
          call.body.empty() && call.method != "PUT"
              ? std::string(kUnsignedPayload)
              : sha256_hex({reinterpret_cast<const uint8_t*>(call.body.data()), call.body.size()});
      const std::string date = amz_date_now();
      headers.emplace_back("x-amz-date", date);
      headers.emplace_back("x-amz-content-sha256", payload_hash);
      if (!creds.session_token.empty()) {
        headers.emplace_back("x-amz-security-token", creds.session_token);
      }
      SigningInput in{
          call.method, t.path, call.query, headers, payload_hash, date, config_.endpoint.region};
      in.headers.emplace_back("host", host_header);
      OC_ASSIGN_OR_RETURN(Signature sig, sign_v4(in, creds));
      headers.emplace_back("authorization", std::move(sig.authorization));
    }
  }

  std::vector<HeaderField> fields;
  fields.reserve(headers.size());
  for (const auto& [k, v] : headers) fields.emplace_back(k, v);
  HttpRequest req{call.method, target, host_header, fields, call.body, call.expect_continue};

  OC_ASSIGN_OR_RETURN(ConnectionPool::Lease lease,
                      pool_->acquire(where, Clock::now() + config_.timeouts.connect));
  if (call.cancel) call.cancel->attach(lease.conn.get());
  reused = lease.reused;

  ExchangeOptions options;
  options.head_only = call.head_only;
  options.parts = call.parts;
  if (!call.parts.empty()) {
    // Each part's Content-Range is checked as it arrives (byteranges.cpp); the object is pinned
    // here.
    options.check = [&](const ResponseHead& h) { return pin_etag(call.etag, h); };
  }
  const uint64_t want_first = call.offset ? *call.offset + call.done : 0;
  const uint64_t want_last = call.offset ? *call.offset + call.dest.size() - 1 : 0;
  if (call.offset) {
    // Ranged GETs are vetted before a byte lands in the destination: a wrong range or another
    // version of the object must never be mixed into it.
    options.check = [&](const ResponseHead& h) -> Result<void> {
      OC_EXPECT(h.status == 206, protocol, "expected 206 Partial Content, got {}", h.status);
      const std::string* cr_text = h.find("content-range");
      OC_EXPECT(cr_text, protocol, "206 response without Content-Range");
      auto cr = parse_content_range(*cr_text);
      // A ranged GET names the object's length: the ETag pin and the end check need it.
      OC_EXPECT(cr && cr->complete, protocol, "malformed Content-Range '{}'", *cr_text);
      if (cr->first == want_first && cr->last < want_last && cr->last + 1 == *cr->complete) {
        return OC_ERROR(Errc::invalid, "range ends past the end of the {}-byte object",
                        *cr->complete);
      }
      OC_EXPECT(cr->first == want_first && cr->last == want_last, protocol,
                "Content-Range '{}' does not match the requested bytes {}-{}", *cr_text, want_first,
                want_last);
      OC_EXPECT(h.content_length && *h.content_length == want_last - want_first + 1, protocol,
                "Content-Length {} does not match the {} bytes requested",
                h.content_length ? fmt::to_string(*h.content_length) : "(none)",
                want_last - want_first + 1);
      OC_TRY(pin_etag(call.etag, h));
      call.object_size = *cr->complete;
      return {};
    };
  }

  const uint64_t cpu0 = task_cpu_ns();
  auto dest = call.dest.empty() ? call.dest : call.dest.subspan(call.done);
  auto r = exchange(*lease.conn, req, dest, config_.timeouts, progress, options);
  call.stats.cpu += std::chrono::nanoseconds(task_cpu_ns() - cpu0);
  if (call.cancel) call.cancel->attach(nullptr);

  const bool reusable = r.ok() && r->reusable;
  pool_->release(where, std::move(lease.conn), reusable);
  return r;
}

Result<HttpResponse> S3Client::perform(Call& call) {
  // Every request runs on a reactor under the scheduler's cap, whoever asks for it.
  return scheduler().call([&] { return perform_attempts(call); });
}

Scheduler& S3Client::scheduler() const noexcept {
  return config_.scheduler != nullptr ? *config_.scheduler : Scheduler::global();
}

Result<HttpResponse> S3Client::perform_attempts(Call& call) {
  counters_.requests.fetch_add(1, std::memory_order_relaxed);
  struct CpuAccount {
    S3Counters& c;
    Call& call;
    ~CpuAccount() { c.cpu_ns.fetch_add(call.stats.cpu.count(), std::memory_order_relaxed); }
  } cpu_account{counters_, call};
  const uint32_t max_attempts = defaults().s3_max_attempts;
  bool stale_retry_left = true;
  std::string last_failure;
  for (uint32_t attempt_no = 0;;) {
    ExchangeProgress progress;
    bool reused = false;
    auto r = attempt(call, progress, reused);
    counters_.attempts.fetch_add(1, std::memory_order_relaxed);
    ++call.stats.attempts;
    call.done += progress.body_bytes;
    call.stats.bytes += progress.body_bytes;
    call.stats.copied_bytes += progress.copied_bytes;
    counters_.bytes_received.fetch_add(progress.body_bytes, std::memory_order_relaxed);
    counters_.copied_bytes.fetch_add(progress.copied_bytes, std::memory_order_relaxed);
    if (progress.first_byte) {
      const auto ttfb =
          std::chrono::duration_cast<std::chrono::nanoseconds>(progress.time_to_first_byte);
      if (call.stats.ttfb.count() == 0) call.stats.ttfb = ttfb;
      counters_.ttfb_ns_total.fetch_add(ttfb.count(), std::memory_order_relaxed);
      store_max(counters_.ttfb_ns_max, ttfb.count());
    }

    if (call.cancel && call.cancel->cancelled()) {
      return OC_ERROR(Errc::cancelled, "{}: cancelled", call.describe());
    }
    if (r.ok() && (r->head.status < 300 || !retryable_status(r->head.status))) {
      if (r->head.status < 300) {
        if (progress.request_sent) counters_.bytes_sent.fetch_add(call.body.size());
        return r;
      }
      counters_.failures.fetch_add(1, std::memory_order_relaxed);
      log::get().debug("{}: HTTP {}: {}", call.describe(), r->head.status,
                       std::string_view(r->text).substr(0, 1024));
      const Errc code = r->head.status == 404   ? Errc::not_found
                        : r->head.status == 412 ? Errc::corrupt
                                                : Errc::io;
      const std::string s3_code = error_code_of(r->text);
      std::string what = fmt::format("HTTP {} {}", r->head.status, s3_code);
      if (r->head.status == 403) what += " (check the credentials, region and clock)";
      if (r->head.status == 412) what += " (the object changed while being read)";
      if (s3_code == "NoSuchBucket") what = fmt::format("bucket does not exist ({})", what);
      if (s3_code == "NoSuchKey") what = fmt::format("no such key ({})", what);
      return Error(code, fmt::format("{}: {}", call.describe(), what), __FILE__, __LINE__);
    }

    if (r.ok()) {
      last_failure = fmt::format("HTTP {} {}", r->head.status, error_code_of(r->text));
    } else {
      const Error& err = r.error();
      // Wrong ETag or a range past the end: retrying cannot help.
      // A server that does not do multi-range answers: the caller falls back to single ranges.
      // No credentials: the chain already tried every source, and would find none again.
      if (call.no_credentials || err.code() == Errc::corrupt || err.code() == Errc::invalid ||
          err.code() == Errc::denied || err.code() == Errc::unsupported) {
        counters_.failures.fetch_add(1, std::memory_order_relaxed);
        return Error(err).with_context(call.describe());
      }
      last_failure = err.describe();  // part of a message: no position of its own
      // The server may close an idle keep-alive connection just as it is reused; nothing was
      // processed, so one immediate retry on a fresh connection is free (as curl does).
      if (stale_retry_left && reused && !progress.first_byte && call.idempotent) {
        stale_retry_left = false;
        continue;
      }
    }
    // A request that may have taken effect is not sent again blindly: its caller decides.
    if (!call.idempotent && progress.request_sent) {
      counters_.failures.fetch_add(1, std::memory_order_relaxed);
      return Error(r.ok() ? Errc::io : r.error().code(),
                   fmt::format("{}: {} (not retried: the request may have taken effect)",
                               call.describe(), last_failure),
                   __FILE__, __LINE__);
    }
    if (++attempt_no >= max_attempts) {
      counters_.failures.fetch_add(1, std::memory_order_relaxed);
      return OC_ERROR(r.ok() ? Errc::io : r.error().code(), "{}: failed after {} attempts: {}",
                      call.describe(), attempt_no, last_failure);
    }
    counters_.retries.fetch_add(1, std::memory_order_relaxed);
    const auto wait = backoff(attempt_no);
    log::get().debug("{}: attempt {} failed ({}); retrying in {} ms", call.describe(), attempt_no,
                     last_failure, wait.count());
    // A timer of the reactor: the request holds no thread and no connection meanwhile.
    sleep_until(Clock::now() + wait);
  }
}

// ---- operations
// ----------------------------------------------------------------------------------

Result<ObjectInfo> S3Client::head_object(std::string_view bucket, std::string_view key) {
  Call call("HEAD", bucket, key);
  call.head_only = true;
  auto head = perform(call);
  if (!head.ok() && head.error().code() == Errc::not_found && !call.no_credentials) {
    // A HEAD answer has no body to carry NoSuchBucket or NoSuchKey: a listing of at most one key
    // tells them apart, on this error path only.
    auto probe = list_page(bucket, "", "", "", 1);
    const std::string_view what = probe.ok() ? "no such key"
                                  : probe.error().code() == Errc::not_found
                                      ? "bucket does not exist"
                                      : "no such key, or no such bucket";
    return Error(Errc::not_found, fmt::format("{}: {} (HTTP 404)", call.describe(), what), __FILE__,
                 __LINE__);
  }
  if (!head.ok()) return std::move(head).error();
  const HttpResponse& r = *head;
  ObjectInfo info;
  info.key = std::string(key);
  OC_EXPECT(r.head.content_length, protocol, "{}: HEAD response without Content-Length",
            call.describe());
  info.size = *r.head.content_length;
  if (const auto* e = r.head.find("etag")) info.etag = *e;
  if (const auto* m = r.head.find("last-modified")) info.last_modified = *m;
  return info;
}

Result<RangeRead> S3Client::get_range(std::string_view bucket, std::string_view key,
                                      uint64_t offset, std::span<std::byte> dest,
                                      std::string_view if_match, CancelToken* cancel) {
  OC_EXPECT(!dest.empty(), invalid, "empty range of s3://{}/{}", bucket, key);
  Call call("GET", bucket, key);
  call.dest = dest;
  call.offset = offset;
  call.etag = std::string(if_match);
  call.cancel = cancel;
  OC_TRY(perform(call));
  return RangeRead{call.etag, call.object_size, call.stats};
}

Result<RangeRead> S3Client::get_url_range(std::string_view url, uint64_t offset,
                                          std::span<std::byte> dest, std::string_view if_match,
                                          bool public_only) {
  OC_EXPECT(!dest.empty(), invalid, "empty range of {}", redact_url(url));
  Call call("GET");
  call.dest = dest;
  call.public_only = public_only;
  OC_ASSIGN_OR_RETURN(call.presigned, parse_url(url));
  call.offset = offset;
  call.etag = std::string(if_match);
  OC_TRY(perform(call));
  return RangeRead{call.etag, call.object_size, call.stats};
}

Result<RequestStats> S3Client::get_url_ranges(std::string_view url,
                                              std::span<const RangeFetch> parts,
                                              std::string_view if_match, bool public_only) {
  OC_EXPECT(!parts.empty(), invalid, "no ranges of {}", redact_url(url));
  for (const RangeFetch& p : parts) {
    OC_EXPECT(!p.dest.empty(), invalid, "empty range of {}", redact_url(url));
  }
  Call call("GET");
  call.parts = parts;
  call.public_only = public_only;
  OC_ASSIGN_OR_RETURN(call.presigned, parse_url(url));
  call.etag = std::string(if_match);
  OC_TRY(perform(call));
  return call.stats;
}

Result<ObjectInfo> S3Client::stat_url(std::string_view url, bool public_only) {
  std::byte one[1];
  OC_ASSIGN_OR_RETURN(RangeRead r, get_url_range(url, 0, one, {}, public_only));
  ObjectInfo info;
  info.key = redact_url(url);
  info.size = r.object_size;
  info.etag = r.etag;
  return info;
}

Result<ListObjectsPage> S3Client::list_page(std::string_view bucket, std::string_view prefix,
                                            std::string_view delimiter,
                                            std::string_view continuation, uint32_t max_keys) {
  Call call("GET", bucket);
  call.query.emplace_back("list-type", "2");
  if (!continuation.empty()) call.query.emplace_back("continuation-token", continuation);
  if (!delimiter.empty()) call.query.emplace_back("delimiter", delimiter);
  call.query.emplace_back("max-keys", std::to_string(max_keys));
  if (!prefix.empty()) call.query.emplace_back("prefix", prefix);
  OC_ASSIGN_OR_RETURN(HttpResponse r, perform(call));
  return parse_list_objects_v2(r.text);
}

Result<ListObjectsPage> S3Client::list_all(std::string_view bucket, std::string_view prefix,
                                           std::string_view delimiter, uint64_t max_entries) {
  ListObjectsPage all;
  std::string token;
  for (;;) {
    OC_ASSIGN_OR_RETURN(ListObjectsPage page, list_page(bucket, prefix, delimiter, token));
    std::move(page.contents.begin(), page.contents.end(), std::back_inserter(all.contents));
    std::move(page.common_prefixes.begin(), page.common_prefixes.end(),
              std::back_inserter(all.common_prefixes));
    OC_EXPECT(all.contents.size() + all.common_prefixes.size() <= max_entries, invalid,
              "s3://{}/{} holds more than {} keys; list a narrower prefix", bucket, prefix,
              max_entries);
    if (!page.is_truncated) return all;
    OC_EXPECT(!page.next_continuation_token.empty(), protocol,
              "s3://{}/{}: truncated listing without a continuation token", bucket, prefix);
    token = std::move(page.next_continuation_token);
  }
}

Result<std::string> S3Client::put_object(std::string_view bucket, std::string_view key,
                                         std::span<const std::byte> body) {
  Call call("PUT", bucket, key);
  call.body = body;
  // Large bodies wait for the server's go-ahead, so a refused upload (403, wrong region) does
  // not cost the whole body on the wire (RFC 9110 §10.1.1).
  call.expect_continue = body.size() >= defaults().s3_multipart_part_bytes;
  OC_ASSIGN_OR_RETURN(HttpResponse r, perform(call));
  const std::string* etag = r.head.find("etag");
  return etag ? *etag : std::string();
}

Result<std::string> S3Client::create_multipart(std::string_view bucket, std::string_view key) {
  Call call("POST", bucket, key);
  call.idempotent = false;
  call.query.emplace_back("uploads", "");
  OC_ASSIGN_OR_RETURN(HttpResponse r, perform(call));
  return parse_initiate_multipart(r.text);
}

Result<std::string> S3Client::upload_part(std::string_view bucket, std::string_view key,
                                          std::string_view upload_id, uint32_t part_number,
                                          std::span<const std::byte> body) {
  Call call("PUT", bucket, key);
  call.body = body;
  call.query.emplace_back("partNumber", std::to_string(part_number));
  call.query.emplace_back("uploadId", upload_id);
  call.expect_continue = true;
  OC_ASSIGN_OR_RETURN(HttpResponse r, perform(call));
  const std::string* etag = r.head.find("etag");
  OC_EXPECT(etag, protocol, "{}: UploadPart response without ETag", call.describe());
  return *etag;
}

Result<std::string> S3Client::complete_multipart(std::string_view bucket, std::string_view key,
                                                 std::string_view upload_id,
                                                 std::span<const CompletedPart> parts) {
  OC_ASSIGN_OR_RETURN(const std::string xml, complete_multipart_body(parts));
  const std::optional<std::string> expected = multipart_etag(parts);
  const uint32_t max_attempts = defaults().s3_max_attempts;
  Error last = OC_ERROR(Errc::io, "CompleteMultipartUpload was not attempted");
  for (uint32_t attempt_no = 0; attempt_no < max_attempts; ++attempt_no) {
    if (attempt_no > 0) {
      // The last attempt may have completed the upload before its answer was lost: an object
      // with the ETag these parts make says so, and completing again would fail (NoSuchUpload).
      if (auto head = head_object(bucket, key); head.ok() && expected && head->etag == *expected) {
        return head->etag;
      }
      sleep_until(Clock::now() + backoff(attempt_no));
    }
    Call call("POST", bucket, key);
    call.idempotent = false;
    call.body = std::as_bytes(std::span(xml.data(), xml.size()));
    call.query.emplace_back("uploadId", upload_id);
    auto r = perform(call);
    if (r.ok()) {
      // S3 may answer 200 and still report an error in the body; the parser turns that into one.
      auto done = parse_complete_multipart(r->text);
      if (done.ok()) return done->etag;
      last = std::move(done).error().with_context(call.describe());
    } else {
      last = std::move(r).error();
    }
    // Refusals that a retry cannot change end here; a lost answer, a reset or a 5xx is checked
    // and retried.
    if (last.code() == Errc::denied || last.code() == Errc::invalid) break;
    if (last.code() == Errc::not_found && attempt_no == 0) break;
  }
  if (auto head = head_object(bucket, key); head.ok() && expected && head->etag == *expected) {
    return head->etag;
  }
  counters_.failures.fetch_add(1, std::memory_order_relaxed);
  return last;
}

Result<void> S3Client::abort_multipart(std::string_view bucket, std::string_view key,
                                       std::string_view upload_id) {
  Call call("DELETE", bucket, key);
  call.query.emplace_back("uploadId", upload_id);
  OC_TRY(perform(call));
  return {};
}

Result<std::string> S3Client::presign_get(std::string_view bucket, std::string_view key,
                                          std::chrono::seconds expires) {
  OC_EXPECT(config_.credentials, invalid, "presigning needs credentials");
  OC_ASSIGN_OR_RETURN(ResolvedCredentials resolved, config_.credentials->get());
  const Credentials& creds = resolved.credentials;
  OC_ASSIGN_OR_RETURN(RequestTarget t, target_for(config_.endpoint, bucket, key));
  const std::string date = amz_date_now();
  PresignInput in;
  in.amz_date = date;
  in.region = config_.endpoint.region;
  in.expires = expires;
  return presign_url(t, in, creds);
}

}  // namespace oc::net
