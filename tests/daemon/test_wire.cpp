// SPDX-License-Identifier: Apache-2.0
// onecopyd framing: round trips, and every malformed frame is an error, never a crash.
#include <catch2/catch.hpp>

#include <cstring>

#include "daemon/wire.hpp"

using namespace oc::daemon;

namespace {

std::vector<uint8_t> scan_frame() {
  flatbuffers::FlatBufferBuilder fbb;
  std::vector<std::string> cols{"a", "b"};
  auto scan = fbs::CreateScanDirect(fbb, 7, 3, nullptr, "a > 1", 1024);
  (void)cols;
  fbb.Finish(fbs::CreateMessage(fbb, fbs::Body::Scan, scan.Union()));
  return make_frame(fbb);
}

}  // namespace

TEST_CASE("daemon frame: a Scan round-trips", "[daemon]") {
  auto frame = scan_frame();
  auto m = parse_frame(frame, 1 << 20);
  REQUIRE(m.ok());
  const auto* s = (*m)->body_as_Scan();
  REQUIRE(s);
  CHECK(s->request() == 7);
  CHECK(s->file() == 3);
  CHECK(s->filter()->str() == "a > 1");
  CHECK(s->batch_rows() == 1024);
}

TEST_CASE("daemon frame: malformed frames are errors", "[daemon]") {
  auto frame = scan_frame();
  SECTION("shorter than the header") {
    auto r = parse_frame(std::span(frame).first(5), 1 << 20);
    REQUIRE(!r.ok());
    CHECK(r.error().code() == oc::Errc::protocol);
  }
  SECTION("wrong version") {
    frame[0] = 9;
    auto r = parse_frame(frame, 1 << 20);
    REQUIRE(!r.ok());
    CHECK(r.error().message().find("version") != std::string::npos);
  }
  SECTION("length disagrees with the packet") {
    auto r = parse_frame(std::span(frame).first(frame.size() - 4), 1 << 20);
    REQUIRE(!r.ok());
    CHECK(r.error().code() == oc::Errc::protocol);
  }
  SECTION("oversized") {
    auto r = parse_frame(frame, frame.size() - 1);
    REQUIRE(!r.ok());
    CHECK(r.error().code() == oc::Errc::invalid);
  }
  SECTION("garbage body") {
    for (size_t i = kHeaderBytes; i < frame.size(); ++i) frame[i] = 0xff;
    auto r = parse_frame(frame, 1 << 20);
    REQUIRE(!r.ok());
    CHECK(r.error().code() == oc::Errc::protocol);
  }
  SECTION("every truncation and byte flip is handled") {
    for (size_t i = 0; i < frame.size(); ++i) {
      auto copy = frame;
      copy[i] ^= 0x5a;
      fuzz_parse_frame(copy);
      fuzz_parse_frame(std::span(frame).first(i));
    }
  }
}
