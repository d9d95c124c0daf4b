// SPDX-License-Identifier: Apache-2.0
#include "net/http_fetch.hpp"

#include "net/http_client.hpp"
#include "net/scheduler.hpp"
#include "net/url.hpp"

namespace oc::net {

namespace {

Result<FetchResponse> fetch_once(const std::shared_ptr<TlsContext>& tls, const FetchRequest& req) {
  OC_ASSIGN_OR_RETURN(Url url, parse_url(req.url));
  OC_EXPECT(!url.tls() || tls, invalid, "{}: https without a TLS context", req.url);
  const Deadline deadline = Clock::now() + req.timeout;
  ConnectOptions options{url.host, url.port, url.tls() ? tls : nullptr, deadline};
  OC_ASSIGN_OR_RETURN(auto conn, Connection::open(options));
  std::vector<HeaderField> fields;
  for (const auto& [k, v] : req.headers) fields.emplace_back(k, v);
  fields.emplace_back("Connection", "close");
  const std::string host = url.host_header();
  const std::string target = url.request_target();
  HttpRequest http{req.method, target, host, fields, {}, false};
  HttpTimeouts t{req.timeout, req.timeout, req.timeout, req.timeout};
  ExchangeProgress progress;
  OC_ASSIGN_OR_RETURN(HttpResponse r, exchange(*conn, http, {}, t, progress));
  return FetchResponse{r.head.status, std::move(r.text)};
}

}  // namespace

HttpFetch make_http_fetch(std::shared_ptr<TlsContext> tls) {
  // Credential fetches are requests like any other: under the in-flight cap, on a reactor.
  return [tls](const FetchRequest& req) -> Result<FetchResponse> {
    return Scheduler::global().call(
        [&]() -> Result<FetchResponse> { return fetch_once(tls, req); });
  };
}

}  // namespace oc::net
