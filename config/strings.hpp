// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief The few string helpers every layer needs, ASCII only (headers, config files, keys).
#pragma once

#include <string>
#include <string_view>

namespace oc {

/// What `trim` removes by default: the ASCII white space of the C locale's isspace.
inline constexpr std::string_view kWhitespace = " \t\n\v\f\r";

/// @return @p s without the leading and trailing characters found in @p chars.
[[nodiscard]] inline std::string_view trim(std::string_view s,
                                           std::string_view chars = kWhitespace) noexcept {
  const size_t first = s.find_first_not_of(chars);
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(chars) - first + 1);
}

/// @return @p s with its ASCII upper-case letters lowered (nothing else changes).
[[nodiscard]] inline std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

}  // namespace oc
