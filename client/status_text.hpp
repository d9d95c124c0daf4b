// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief onecopyd's status for people (`onecopy status`): sizes in binary units, durations in
/// days to seconds, rates in GB/s, and the asking user's scans with where their time went.
/// `onecopy status --json` gives the raw figures (daemon/status.hpp status_json).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include "daemon/status.hpp"

namespace oc::client {

/// @return @p bytes as "512 B", "1.5 KiB", "20.0 MiB", "3.25 GiB", "1.00 TiB": three
/// significant digits from KiB up.
[[nodiscard]] std::string human_bytes(uint64_t bytes);

/// @return @p ms as "850 ms", "42 s", "3 min 5 s", "2 h 7 min", "3 d 4 h".
[[nodiscard]] std::string human_duration(uint64_t ms);

/// Writes @p s as `onecopy status` prints it.
void print_status(std::ostream& out, const daemon::Status& s);

}  // namespace oc::client
