// SPDX-License-Identifier: Apache-2.0
// onecopyd's status: the wire round trip and the two renderings share one table of fields.
#include <catch2/catch.hpp>

#include "daemon/status.hpp"

using namespace oc::daemon;

namespace {
Status sample() {
  Status s;
  s.version = "9.9.9";
  s.uptime_ms = 1500;
  s.clients = 3;
  s.bytes_delivered = 1 << 20;
  s.copies_per_byte = 1.25;
  s.slabs = 4;
  s.descriptors = 17;
  s.descriptor_budget = 1000;
  s.connections_refused = 2;
  s.requests_refused = 5;
  s.s3_failures = 6;
  ScanStatus scan;
  scan.scan = 12;
  scan.pid = 4242;
  scan.uid = 1000;
  scan.uri = "s3://b/\x1b[2Jk\xff.vortex";  // a name a client chose
  scan.state = "running";
  scan.bytes = 4096;
  scan.profile.rows = 1000;
  scan.profile.batches = 3;
  scan.profile.decode_ns = 2'500'000'000;
  scan.profile.consumer_wait_ns = 500'000'000;
  scan.profile.wall_ns = 3'000'000'000;
  s.scans.push_back(scan);
  return s;
}
}  // namespace

TEST_CASE("a status survives the StatusReply round trip", "[daemon][status]") {
  flatbuffers::FlatBufferBuilder fbb;
  build_status_reply(fbb, sample());
  const auto* m = fbs::GetMessage(fbb.GetBufferPointer());
  REQUIRE(m->body_as_StatusReply());
  const Status back = status_from_reply(*m->body_as_StatusReply());
  CHECK(status_json(back) == status_json(sample()));
  CHECK(back.requests_refused == 5);
  CHECK(back.descriptor_budget == 1000);
  REQUIRE(back.scans.size() == 1);
  CHECK(back.scans[0].uri == sample().scans[0].uri);
  CHECK(back.scans[0].profile.decode_ns == 2'500'000'000);
  CHECK_FALSE(back.scans[0].profile.complete);  // running
}

TEST_CASE("status JSON lists scans with their stages in seconds", "[daemon][status]") {
  const std::string json = status_json(sample());
  for (const char* key :
       {"\"scans\": [{\"scan\": 12, \"pid\": 4242, \"uid\": 1000",
        "\"uri\": \"s3://b/\\u001b[2Jk\\ufffd.vortex\"", "\"state\": \"running\"", "\"rows\": 1000",
        "\"decode_s\": 2.500000", "\"consumer_wait_s\": 0.500000", "\"wall_s\": 3.000000",
        "\"bottleneck\": \"decode\""}) {
    INFO(key);
    CHECK(json.find(key) != std::string::npos);
  }
  // Per-scan lines are for the client that asked, not for Prometheus.
  CHECK(status_prometheus(sample()).find("s3://b/") == std::string::npos);
}

TEST_CASE("status JSON and Prometheus text carry every field", "[daemon][status]") {
  const std::string json = status_json(sample());
  for (const char* key : {"\"version\": \"9.9.9\"", "\"clients\": 3", "\"copies_per_byte\": 1.25",
                          "\"slabs\": 4", "\"descriptors\": 17", "\"connections_refused\": 2",
                          "\"requests_refused\": 5", "\"s3_failures\": 6", "\"uptime_ms\": 1500"}) {
    INFO(key);
    CHECK(json.find(key) != std::string::npos);
  }
  const std::string prom = status_prometheus(sample());
  for (const char* line :
       {"onecopy_build_info{version=\"9.9.9\"} 1\n", "onecopy_uptime_seconds 1.5\n",
        "onecopy_clients 3\n", "# TYPE onecopy_requests_refused_total counter\n",
        "onecopy_connections_refused_total 2\n", "onecopy_descriptors 17\n",
        "onecopy_s3_failures_total 6\n"}) {
    INFO(line);
    CHECK(prom.find(line) != std::string::npos);
  }
}
