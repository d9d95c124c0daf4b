// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief A `format::ScanRequest` on the wire: the protocol's `Scan` message is that struct
/// serialized, and these two functions are the only place that maps one to the other.
#pragma once

#include <cstdint>

#include "config/error.hpp"
#include "daemon/protocol_generated.h"
#include "format/scan_request.hpp"

namespace oc::daemon {

/// @p request as a `Scan` of open file @p file, answering request id @p id.
[[nodiscard]] flatbuffers::Offset<fbs::Scan> to_fbs(flatbuffers::FlatBufferBuilder& fbb,
                                                    uint64_t id, uint64_t file,
                                                    const format::ScanRequest& request);

/// The request a `Scan` carries. A message from a client that does not state its selection
/// (`Inferred`) is read as such clients meant it; naming more than one selection, or an odd
/// number of range bounds, is `invalid`. The request is not validated here (format::plan does).
[[nodiscard]] Result<format::ScanRequest> from_fbs(const fbs::Scan& scan);

}  // namespace oc::daemon
