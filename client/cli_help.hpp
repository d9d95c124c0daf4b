// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief The `onecopy` command line's help: one entry per command, with its synopsis and its
/// options, printed by `onecopy --help` (every command, a line each) and `onecopy CMD --help`.
#pragma once

#include <ostream>
#include <string_view>

namespace oc::client {

struct CliCommand {
  std::string_view name;
  std::string_view summary;  ///< one line for the overview
  std::string_view usage;    ///< "onecopy NAME ARGS", possibly over several lines
  std::string_view details;  ///< the options and what the command does, for `NAME --help`
};

/// @return the command called @p name, or nullptr.
[[nodiscard]] const CliCommand* find_command(std::string_view name);

/// Every command with its summary, and where to read more.
void print_overview(std::ostream& out);

/// @p cmd's usage and details.
void print_command_help(std::ostream& out, const CliCommand& cmd);

}  // namespace oc::client
