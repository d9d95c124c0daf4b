// SPDX-License-Identifier: Apache-2.0
// The metrics port's request reader and responses: requests split anywhere, wrong paths and
// methods, malformed and oversized requests.
#include <catch2/catch.hpp>
#include <string>

#include "daemon/metrics_http.hpp"

using oc::daemon::http_response;
using oc::daemon::HttpOutcome;
using oc::daemon::HttpRequestReader;

namespace {
HttpOutcome read_all(const std::string& req, size_t split, uint64_t max = 8192) {
  HttpRequestReader r(max);
  split = std::min(split, req.size());
  const HttpOutcome first = r.feed({req.data(), split});
  if (first != HttpOutcome::incomplete) return first;
  return r.feed({req.data() + split, req.size() - split});
}
}  // namespace

TEST_CASE("metrics http: GET /metrics, split at every byte", "[daemon][metrics]") {
  const std::string req =
      "GET /metrics?x=1 HTTP/1.1\r\nHost: 127.0.0.1:9187\r\nAccept: text/plain\r\n\r\n";
  for (size_t split = 0; split <= req.size(); ++split) {
    INFO(split);
    CHECK(read_all(req, split) == HttpOutcome::metrics);
  }
  HttpRequestReader r(8192);
  CHECK(r.feed({req.data(), req.size() - 1}) == HttpOutcome::incomplete);
}

TEST_CASE("metrics http: other paths, methods and malformed requests", "[daemon][metrics]") {
  CHECK(read_all("GET / HTTP/1.1\r\nHost: x\r\n\r\n", 3) == HttpOutcome::not_found);
  CHECK(read_all("GET /metricsz HTTP/1.0\r\n\r\n", 5) == HttpOutcome::not_found);
  CHECK(read_all("POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n", 9) ==
        HttpOutcome::method_not_allowed);
  CHECK(read_all("GARBAGE\r\n\r\n", 4) == HttpOutcome::bad_request);
  CHECK(read_all("GET /metrics HTTP/9.9\r\n\r\n", 4) == HttpOutcome::bad_request);
  CHECK(read_all("GET /metrics HTTP/1.1\r\nBad Header\r\n\r\n", 4) == HttpOutcome::bad_request);
  const std::string big = "GET /metrics HTTP/1.1\r\nX-Pad: " + std::string(9000, 'a') + "\r\n\r\n";
  CHECK(read_all(big, 100) == HttpOutcome::bad_request);
  CHECK(read_all(big, 100, 16384) == HttpOutcome::metrics);
}

TEST_CASE("metrics http: responses", "[daemon][metrics]") {
  const std::string ok = http_response(HttpOutcome::metrics, "onecopy_clients 1\n");
  CHECK(ok.rfind("HTTP/1.1 200 OK\r\n", 0) == 0);
  CHECK(ok.find("Content-Type: text/plain; version=0.0.4") != std::string::npos);
  CHECK(ok.find("Content-Length: 18\r\n") != std::string::npos);
  CHECK(ok.find("Connection: close\r\n") != std::string::npos);
  CHECK(ok.substr(ok.size() - 18) == "onecopy_clients 1\n");
  CHECK(http_response(HttpOutcome::not_found, "x").rfind("HTTP/1.1 404 ", 0) == 0);
  CHECK(http_response(HttpOutcome::bad_request, "x").rfind("HTTP/1.1 400 ", 0) == 0);
  CHECK(http_response(HttpOutcome::method_not_allowed, "").find("Allow: GET") != std::string::npos);
}
