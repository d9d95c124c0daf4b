// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief Framing of onecopyd's protocol: one frame per SOCK_SEQPACKET packet.
///
/// A frame is an 8-byte header (u32 protocol version, u32 body length, little endian) followed by
/// a FlatBuffer `oc.daemon.fbs.Message` (daemon/protocol.fbs). `parse_frame` checks the header
/// against the packet, the size limit and the FlatBuffers Verifier before anything reads it.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "config/error.hpp"
#include "daemon/protocol_generated.h"

namespace oc::daemon {

inline constexpr uint32_t kProtocolVersion = 1;
inline constexpr size_t kHeaderBytes = 8;

/// Wraps the finished FlatBuffer in @p fbb into a frame.
[[nodiscard]] std::vector<uint8_t> make_frame(flatbuffers::FlatBufferBuilder& fbb);

/// Checks @p packet and returns its verified message (pointing into @p packet).
/// `Errc::protocol` for a short, mismatched, wrong-version or unverifiable frame;
/// `Errc::invalid` for one larger than @p max_bytes.
[[nodiscard]] Result<const fbs::Message*> parse_frame(std::span<const uint8_t> packet,
                                                      size_t max_bytes);

/// libFuzzer entry: parses @p data as a frame and, when it verifies, walks every field.
void fuzz_parse_frame(std::span<const uint8_t> data);

}  // namespace oc::daemon
