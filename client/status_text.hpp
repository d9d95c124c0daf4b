// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief onecopyd's status for people (`onecopy status`): sizes in binary units, durations in
/// days to seconds, rates in GB/s, and the asking user's scans with where their time went.
/// `onecopy status --json` gives the raw figures (daemon/status.hpp status_json).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include "client/human_units.hpp"
#include "daemon/status.hpp"

namespace oc::client {

/// Writes @p s as `onecopy status` prints it.
void print_status(std::ostream& out, const daemon::Status& s);

}  // namespace oc::client
