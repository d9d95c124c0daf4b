// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief Process-wide logging on spdlog, to stderr, level from the defaults table.
#pragma once

#include <spdlog/spdlog.h>

#include <string_view>

#include "config/error.hpp"

namespace oc::log {

/// Sets up the "onecopy" stderr logger at @p level (a `log_level` knob value).
/// @return `Errc::invalid` for an unknown level name.
[[nodiscard]] Result<void> init(std::string_view level);

/// @return the process logger; a default stderr logger at "info" if `init` was never called.
[[nodiscard]] spdlog::logger& get();

}  // namespace oc::log
