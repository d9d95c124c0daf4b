// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief Framing of onecopyd's protocol: one frame per SOCK_SEQPACKET packet.
///
/// A frame is an 8-byte header (u32 protocol version, u32 body length, little endian) followed by
/// a FlatBuffer `oc.daemon.fbs.Message` (daemon/protocol.fbs). `parse_frame` checks the header
/// against the packet, the size limit and the FlatBuffers Verifier before anything reads it.
///
/// A SOCK_SEQPACKET packet cannot be larger than the socket's send buffer, so neither side sends
/// one over `kMaxPacketBytes`: a larger frame (a 5,000-column schema, a million units) goes as a
/// run of `Part` frames (`packets_of`), which the receiver joins (`PartAssembler`) up to its own
/// size limit before parsing the whole.
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "config/error.hpp"
#include "config/fd.hpp"
#include "daemon/protocol_generated.h"

namespace oc::daemon {

inline constexpr uint32_t kProtocolVersion = 2;
inline constexpr size_t kHeaderBytes = 8;
/// The largest packet either side sends (well under the default Unix socket buffer, ~208 KiB).
inline constexpr size_t kMaxPacketBytes = 64 << 10;

/// One node of a scan's Arrow schema as ScanBegin lists them (pre-order), kept outside a
/// message: while a ScanBegin waits for the loop thread, or once the client has read it.
struct SchemaNodeCopy {
  std::string format, name;
  int64_t flags = 0;
  uint32_t n_children = 0;
};

/// Wraps the finished FlatBuffer in @p fbb into a frame.
[[nodiscard]] std::vector<uint8_t> make_frame(flatbuffers::FlatBufferBuilder& fbb);

/// Checks @p packet and returns its verified message (pointing into @p packet).
/// `Errc::protocol` for a short, mismatched, wrong-version or unverifiable frame;
/// `Errc::invalid` for one larger than @p max_bytes.
[[nodiscard]] Result<const fbs::Message*> parse_frame(std::span<const uint8_t> packet,
                                                      size_t max_bytes);

/// @return @p frame as the packets that carry it: itself when it fits in kMaxPacketBytes, else
///         `Part` frames of at most that size whose data, joined, is @p frame.
[[nodiscard]] std::vector<std::vector<uint8_t>> packets_of(std::vector<uint8_t> frame);

/// Joins the `Part`s of one frame.
class PartAssembler {
 public:
  /// @param max_bytes the largest frame it will join; more is `invalid`.
  explicit PartAssembler(size_t max_bytes) : max_bytes_(max_bytes) {}

  /// Adds @p part. @return the whole frame once its last part came (then the assembler is empty
  /// again), nullopt while more are due; `invalid` past the size limit.
  [[nodiscard]] Result<std::optional<std::vector<uint8_t>>> add(const fbs::Part& part);
  /// Whether a frame is half joined.
  [[nodiscard]] bool pending() const noexcept { return !buf_.empty(); }

 private:
  size_t max_bytes_;
  std::vector<uint8_t> buf_;
};

/// Sends @p packet on @p sock in one sendmsg (all or nothing on SOCK_SEQPACKET) with @p fd
/// attached as SCM_RIGHTS unless it is -1, retrying EINTR. @return sendmsg's result (-1 with
/// errno set).
ssize_t send_packet(int sock, std::span<const uint8_t> packet, int fd, int flags);

/// @return the first descriptor @p mh's SCM_RIGHTS control messages carried; any others are
/// closed.
[[nodiscard]] UniqueFd first_descriptor(msghdr& mh);

/// libFuzzer entry: parses @p data as a frame and, when it verifies, walks every field.
void fuzz_parse_frame(std::span<const uint8_t> data);

}  // namespace oc::daemon
