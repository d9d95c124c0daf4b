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

TEST_CASE("daemon frame: a frame larger than a packet travels as Parts and joins again",
          "[daemon]") {
  flatbuffers::FlatBufferBuilder fbb;
  std::vector<uint64_t> units(100'000);  // 800 KB of units: a dozen packets
  for (size_t i = 0; i < units.size(); ++i) units[i] = i * 3;
  fbb.Finish(fbs::CreateMessage(fbb, fbs::Body::Opened,
                                fbs::CreateOpenedDirect(fbb, 5, 9, 300'000, &units).Union()));
  const std::vector<uint8_t> frame = make_frame(fbb);
  auto packets = packets_of(frame);
  REQUIRE(packets.size() > 10);
  PartAssembler joined(1 << 20);
  std::optional<std::vector<uint8_t>> whole;
  for (size_t i = 0; i < packets.size(); ++i) {
    CHECK(packets[i].size() <= kMaxPacketBytes);
    auto m = parse_frame(packets[i], kMaxPacketBytes);
    REQUIRE(m.ok());
    REQUIRE((*m)->body_type() == fbs::Body::Part);
    CHECK((*m)->body_as_Part()->more() == (i + 1 < packets.size()));
    auto r = joined.add(*(*m)->body_as_Part());
    REQUIRE(r.ok());
    CHECK(r->has_value() == (i + 1 == packets.size()));
    if (r->has_value()) whole = std::move(**r);
  }
  REQUIRE(whole);
  CHECK(*whole == frame);
  CHECK_FALSE(joined.pending());
  auto m = parse_frame(*whole, 1 << 20);
  REQUIRE(m.ok());
  CHECK((*m)->body_as_Opened()->units()->size() == units.size());
  // A small frame is its own packet.
  CHECK(packets_of(scan_frame()).size() == 1);
}

TEST_CASE("daemon frame: Parts past the size limit are refused and forgotten", "[daemon]") {
  std::vector<uint8_t> big(300'000, 7);
  auto packets = packets_of(big);
  PartAssembler joined(100'000);
  bool refused = false;
  for (const auto& p : packets) {
    auto m = parse_frame(p, kMaxPacketBytes);
    REQUIRE(m.ok());
    auto r = joined.add(*(*m)->body_as_Part());
    if (!r.ok()) {
      CHECK(r.error().code() == oc::Errc::invalid);
      refused = true;
      break;
    }
  }
  CHECK(refused);
  CHECK_FALSE(joined.pending());
}

TEST_CASE("daemon frame: a union type without its value is refused (issue 14, fuzzer find)",
          "[daemon]") {
  // The Verifier accepts a Message whose body_type says Hello but whose body is absent; a
  // handler reading it would follow a null table.
  flatbuffers::FlatBufferBuilder fbb;
  fbs::MessageBuilder mb(fbb);
  mb.add_body_type(fbs::Body::Hello);
  fbb.Finish(mb.Finish());
  auto r = parse_frame(make_frame(fbb), 1 << 20);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code() == oc::Errc::protocol);
  CHECK(r.error().message() == "message has no body");
}
