// SPDX-License-Identifier: Apache-2.0
#include "daemon/wire.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <utility>

namespace oc::daemon {
namespace {

uint32_t load_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

}  // namespace

std::vector<uint8_t> make_frame(flatbuffers::FlatBufferBuilder& fbb) {
  const uint32_t version = kProtocolVersion;
  const auto length = static_cast<uint32_t>(fbb.GetSize());
  std::vector<uint8_t> out(kHeaderBytes + length);
  std::memcpy(out.data(), &version, 4);
  std::memcpy(out.data() + 4, &length, 4);
  std::memcpy(out.data() + kHeaderBytes, fbb.GetBufferPointer(), length);
  return out;
}

std::vector<std::vector<uint8_t>> packets_of(std::vector<uint8_t> frame) {
  std::vector<std::vector<uint8_t>> out;
  if (frame.size() <= kMaxPacketBytes) {
    out.push_back(std::move(frame));
    return out;
  }
  // Room for the Part's own header and FlatBuffer fields around its data.
  constexpr size_t kPiece = kMaxPacketBytes - 256;
  for (size_t at = 0; at < frame.size(); at += kPiece) {
    const size_t n = std::min(kPiece, frame.size() - at);
    flatbuffers::FlatBufferBuilder fbb(n + 128);
    auto data = fbb.CreateVector(frame.data() + at, n);
    auto part = fbs::CreatePart(fbb, data, at + n < frame.size());
    fbb.Finish(fbs::CreateMessage(fbb, fbs::Body::Part, part.Union()));
    out.push_back(make_frame(fbb));
  }
  return out;
}

ssize_t send_packet(int sock, std::span<const uint8_t> packet, int fd, int flags) {
  iovec iov{const_cast<uint8_t*>(packet.data()), packet.size()};
  msghdr mh{};
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  if (fd >= 0) {
    mh.msg_control = control;
    mh.msg_controllen = sizeof control;
    cmsghdr* cm = CMSG_FIRSTHDR(&mh);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(cm), &fd, sizeof(int));
  }
  ssize_t n;
  do {
    n = ::sendmsg(sock, &mh, flags);
  } while (n < 0 && errno == EINTR);
  return n;
}

UniqueFd first_descriptor(msghdr& mh) {
  UniqueFd first;
  for (cmsghdr* c = CMSG_FIRSTHDR(&mh); c != nullptr; c = CMSG_NXTHDR(&mh, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < count; ++i) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
      if (!first.valid()) {
        first.reset(fd);
      } else {
        ::close(fd);
      }
    }
  }
  return first;
}

Result<std::optional<std::vector<uint8_t>>> PartAssembler::add(const fbs::Part& part) {
  const size_t n = part.data() ? part.data()->size() : 0;
  if (buf_.size() + n > max_bytes_) {
    buf_.clear();
    return OC_ERROR(Errc::invalid, "a message in parts is over the {}-byte limit", max_bytes_);
  }
  if (n > 0) buf_.insert(buf_.end(), part.data()->begin(), part.data()->end());
  if (part.more()) return std::optional<std::vector<uint8_t>>();
  return std::optional<std::vector<uint8_t>>(std::exchange(buf_, {}));
}

Result<const fbs::Message*> parse_frame(std::span<const uint8_t> packet, size_t max_bytes) {
  OC_EXPECT(packet.size() <= max_bytes, invalid, "frame of {} bytes exceeds the {}-byte limit",
            packet.size(), max_bytes);
  OC_EXPECT(packet.size() >= kHeaderBytes, protocol, "frame of {} bytes is shorter than its header",
            packet.size());
  const uint32_t version = load_u32(packet.data());
  const uint32_t length = load_u32(packet.data() + 4);
  OC_EXPECT(version == kProtocolVersion, protocol, "protocol version {} (this side speaks {})",
            version, kProtocolVersion);
  OC_EXPECT(length == packet.size() - kHeaderBytes, protocol,
            "frame header says {} bytes, packet carries {}", length, packet.size() - kHeaderBytes);
  const uint8_t* body = packet.data() + kHeaderBytes;
  // FlatBuffers' Verifier needs 4-byte alignment of the root offset, which a packet buffer at
  // offset 8 of an aligned allocation provides; misaligned buffers are rejected, not read.
  flatbuffers::Verifier::Options opts;
  opts.max_depth = 16;
  opts.max_tables = 1'000'000;
  flatbuffers::Verifier v(body, length, opts);
  OC_EXPECT(fbs::VerifyMessageBuffer(v), protocol, "frame does not verify as a Message");
  const auto* msg = fbs::GetMessage(body);
  // A union's type may verify without its value: every handler may then count on a body.
  OC_EXPECT(msg->body_type() != fbs::Body::NONE && msg->body() != nullptr, protocol,
            "message has no body");
  return msg;
}

void fuzz_parse_frame(std::span<const uint8_t> data) {
  // Copy into an aligned buffer the way a recv() into a vector would place it.
  std::vector<uint8_t> buf(data.begin(), data.end());
  auto r = parse_frame(buf, 1 << 20);
  if (!r.ok()) return;
  const fbs::Message* m = *r;
  uint64_t sink = 0;
  if (const auto* s = m->body_as_Scan()) {
    if (s->columns())
      for (const auto* c : *s->columns()) sink += c->size();
    if (s->filter()) sink += s->filter()->size();
  } else if (const auto* b = m->body_as_Batch()) {
    if (b->arrays()) {
      for (const auto* a : *b->arrays()) {
        if (a->buffers())
          for (const auto* x : *a->buffers()) sink += x->offset() + x->length();
      }
    }
  } else if (const auto* sb = m->body_as_ScanBegin()) {
    if (sb->schema())
      for (const auto* n : *sb->schema()) sink += n->format() ? n->format()->size() : 0;
  } else if (const auto* o = m->body_as_Open()) {
    if (o->uri()) sink += o->uri()->size();
  }
  [[maybe_unused]] volatile uint64_t keep = sink;
}

}  // namespace oc::daemon
