// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief JSON string literals for the hand-written JSON that onecopy prints (inspect, status,
/// rows as JSONL).
#pragma once

#include <string>
#include <string_view>

namespace oc {

/// Appends @p s to @p out as a JSON string literal: quotes, backslashes and control characters
/// escaped, valid UTF-8 kept as it is and each byte of an invalid sequence written as U+FFFD,
/// so that the result parses whatever bytes a file or a client supplied.
void append_json_string(std::string& out, std::string_view s);

/// @return @p s as a JSON string literal (append_json_string).
[[nodiscard]] inline std::string json_string(std::string_view s) {
  std::string out;
  append_json_string(out, s);
  return out;
}

}  // namespace oc
