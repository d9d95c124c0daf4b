// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief onecopyd's configuration: a TOML file of knob-table keys, then environment overrides.
///
/// Every key of the file is a knob's table name (config/defaults.hpp); values are TOML strings
/// or integers in the syntax the knob's environment variable takes. Unknown keys, tables and
/// wrong types are `Errc::invalid` errors naming the key and its line. Environment variables
/// override the file, and `--socket` overrides both.
#pragma once

#include <optional>
#include <string>

#include "config/defaults.hpp"
#include "config/error.hpp"
#include "onecopy_paths.h"

namespace oc::daemon {

/// The config file onecopyd reads without --config: SYSCONFDIR/onecopy/onecopyd.toml, which the
/// build takes from its prefix (/etc/onecopy/onecopyd.toml for --prefix=/usr, as the .deb has it).
inline constexpr const char* kDefaultConfigPath = OC_CONFIG_PATH;

/// Applies the TOML text @p toml (named @p origin in errors) over @p d.
[[nodiscard]] Result<void> apply_toml(Defaults& d, std::string_view toml,
                                      const std::string& origin);

/// Built-in defaults, then @p path (skipped when @p optional and missing), then the environment.
[[nodiscard]] Result<Defaults> load_config(const std::string& path, bool optional);

/// @return an annotated example config generated from the knob table.
[[nodiscard]] std::string example_config();

}  // namespace oc::daemon
