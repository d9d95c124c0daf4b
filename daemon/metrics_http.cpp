// SPDX-License-Identifier: Apache-2.0
#include "daemon/metrics_http.hpp"

#include <fmt/format.h>
#include <llhttp.h>

namespace oc::daemon {

struct HttpRequestReader::State {
  llhttp_t parser{};
  llhttp_settings_t settings{};
  std::string url;
  uint64_t max_bytes = 0, seen = 0;
  bool complete = false;
  HttpOutcome outcome = HttpOutcome::incomplete;

  static State& of(llhttp_t* p) { return *static_cast<State*>(p->data); }
};

HttpRequestReader::HttpRequestReader(uint64_t max_bytes) : state_(std::make_unique<State>()) {
  State& s = *state_;
  s.max_bytes = max_bytes;
  llhttp_settings_init(&s.settings);
  s.settings.on_url = [](llhttp_t* p, const char* at, size_t n) {
    State::of(p).url.append(at, n);  // bounded: feed counts every byte first
    return 0;
  };
  s.settings.on_message_complete = [](llhttp_t* p) {
    State::of(p).complete = true;
    return static_cast<int>(HPE_PAUSED);  // one request per connection; later bytes are ignored
  };
  llhttp_init(&s.parser, HTTP_REQUEST, &s.settings);
  s.parser.data = &s;
}

HttpRequestReader::~HttpRequestReader() = default;

HttpOutcome HttpRequestReader::feed(std::span<const char> bytes) {
  State& s = *state_;
  if (s.outcome != HttpOutcome::incomplete) return s.outcome;
  s.seen += bytes.size();
  if (s.seen > s.max_bytes) return s.outcome = HttpOutcome::bad_request;
  const llhttp_errno_t rc = llhttp_execute(&s.parser, bytes.data(), bytes.size());
  if (rc != HPE_OK && rc != HPE_PAUSED) return s.outcome = HttpOutcome::bad_request;
  if (!s.complete) return HttpOutcome::incomplete;
  if (llhttp_get_method(&s.parser) != HTTP_GET) return s.outcome = HttpOutcome::method_not_allowed;
  // The request target in origin form (RFC 9112 §3.2.1): a path, then an optional query.
  const std::string_view path = std::string_view(s.url).substr(0, s.url.find('?'));
  s.outcome = path == "/metrics" ? HttpOutcome::metrics : HttpOutcome::not_found;
  return s.outcome;
}

std::string http_response(HttpOutcome outcome, std::string_view metrics) {
  std::string_view status = "400 Bad Request", body = "bad request\n";
  switch (outcome) {
    case HttpOutcome::metrics:
      status = "200 OK";
      body = metrics;
      break;
    case HttpOutcome::not_found:
      status = "404 Not Found";
      body = "not found; try /metrics\n";
      break;
    case HttpOutcome::method_not_allowed:
      status = "405 Method Not Allowed";
      body = "only GET\n";
      break;
    case HttpOutcome::incomplete:
    case HttpOutcome::bad_request:
      break;
  }
  // The Prometheus text exposition format's content type, version 0.0.4.
  const std::string_view type = outcome == HttpOutcome::metrics
                                    ? "text/plain; version=0.0.4; charset=utf-8"
                                    : "text/plain; charset=utf-8";
  return fmt::format(
      "HTTP/1.1 {}\r\nContent-Type: {}\r\nContent-Length: {}\r\n{}Connection: close\r\n\r\n{}",
      status, type, body.size(), outcome == HttpOutcome::method_not_allowed ? "Allow: GET\r\n" : "",
      body);
}

}  // namespace oc::daemon
