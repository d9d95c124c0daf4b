// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief Sizes and durations for people: what `onecopy status`, `inspect` and `cache clear`
/// print (their --json forms keep the raw numbers).
#pragma once

#include <cstdint>
#include <string>

namespace oc::client {

/// @return @p bytes as "512 B", "1.5 KiB", "20.0 MiB", "3.25 GiB", "1.00 TiB": three
/// significant digits from KiB up.
[[nodiscard]] std::string human_bytes(uint64_t bytes);

/// @return @p ms as "850 ms", "42 s", "3 min 5 s", "2 h 7 min", "3 d 4 h".
[[nodiscard]] std::string human_duration(uint64_t ms);

}  // namespace oc::client
