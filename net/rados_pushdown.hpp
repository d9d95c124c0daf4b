// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief Vortex files in RADOS whose scans run inside the OSDs (object class `onecopy`).
///
/// A scan of a `rados://` file is cut into calls of about `rados_pushdown_rows` rows at the
/// file's chunk boundaries; each call runs `onecopy.scan` (format/pushdown.hpp) on the OSD that
/// holds the object, which prunes, filters and projects there and answers an Arrow IPC stream
/// of the surviving rows. `rados_ops_in_flight` calls run at once; batches come back in row
/// order, each call's once: a call is retried whole (`rados_op_attempts`) when its OSD timed
/// out or restarted, halved when its answer would pass the OSD's result cap, and nothing of a
/// failed call is ever delivered. The `rados_pushdown` knob decides: `auto` pushes down scans
/// that filter or project and falls back to reading the object (`rados_read`) when the class is
/// not loaded or not allowed; `on` pushes every scan down and fails without the class; `off`
/// never pushes down.
#pragma once

#include <memory>

#include "config/error.hpp"
#include "format/reader.hpp"
#include "net/rados.hpp"

namespace oc::net {

/// Opens @p uri: the file through librados reads, its scans offered to the OSDs.
[[nodiscard]] Result<std::shared_ptr<format::VortexFile>> open_rados_file(const net::RadosUri& uri);

/// The pushdown `open_rados_file` sets on a file stored as @p object in @p pool (tests pass a
/// pool that injects faults).
[[nodiscard]] std::shared_ptr<format::ScanPushdown> make_rados_pushdown(
    std::shared_ptr<net::RadosPool> pool, std::string object);

}  // namespace oc::net
