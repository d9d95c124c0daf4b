// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief The protocol fuzz entry: sequences of messages from one client, through the daemon's
/// real dispatch and batch pipeline (`Server`), with inline worker pools.
#pragma once

#include <cstdint>
#include <span>

namespace oc::daemon {

/// Feeds @p data to a fresh `Server` as the packets of one client. @p data is a run of records
/// `u8 flags, u16 length (little endian), length bytes`: the bytes are one packet; flag 1
/// attaches a descriptor of @p file (a Vortex file's bytes, in a memfd) to it; flag 2 then
/// releases every batch the client holds; flag 4 then ends the session and starts another.
/// After each record the pools' completions run and the session is served, as the event loop
/// would. Anything but a clean return (a crash, a leak, undefined behaviour) is a finding.
void fuzz_session(std::span<const uint8_t> data, std::span<const uint8_t> file);

}  // namespace oc::daemon
