// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief Turns a `Scan` request (daemon/protocol.fbs) into a scan of an open file: a plain
/// row-range scan, or, with `sharded`, the shard's units (format/shard.hpp) from a start
/// position, so that a client that lost its connection resumes with the same spec.
#pragma once

#include <cstdint>
#include <memory>

#include "config/error.hpp"
#include "daemon/protocol_generated.h"
#include "format/reader.hpp"
#include "format/shard.hpp"

namespace oc::daemon {

/// A scan ready to serve, and what ScanBegin reports about it.
struct PlannedScan {
  std::unique_ptr<format::Scan> scan;
  uint64_t units = 0;  ///< units in the shard; 0 for an unsharded scan
};

/// Plans @p request over @p file: its explicit `ranges` as units, or its shard, cutting units of at most the request's `unit_rows` rows, or
/// @p default_unit_rows when it is 0. `invalid` for a sharded request with a row range, a shard
/// spec that fails format::validate, or a start past the shard's last unit; errors of the
/// columns or the filter as format::VortexFile::scan reports them. With @p device (a GPU's
/// decoder), the batches are decoded into that device's memory, strings as offsets.
/// @note Cutting the file into units reads its layout, which may fetch from the file's source.
[[nodiscard]] Result<PlannedScan> plan_scan(const fbs::Scan& request,
                                            std::shared_ptr<const format::VortexFile> file,
                                            uint64_t default_unit_rows,
                                            std::shared_ptr<format::ChunkDecoder> device = nullptr);

/// @return where @p scan stands after the last batch it returned, when it is a sharded scan
/// (a format::UnitScan); {0, 0} otherwise.
[[nodiscard]] format::UnitPosition position_after(const format::Scan& scan);

}  // namespace oc::daemon
