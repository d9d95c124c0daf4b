// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief The one parser of an HTTP Content-Range value (RFC 9110, 14.4), for a single ranged
/// GET's response (net/s3_client.cpp) and for each part of a multipart/byteranges body
/// (net/byteranges.cpp).
///
///   Content-Range: bytes FIRST-LAST/COMPLETE      COMPLETE a length, or "*" when unknown
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace oc::net {

struct ContentRange {
  uint64_t first = 0, last = 0;      ///< the bytes sent, both inclusive
  std::optional<uint64_t> complete;  ///< the representation's length; nullopt for "*"
};

/// @return the range @p value states, or nullopt unless it is one: the unit `bytes` (any case),
/// FIRST <= LAST, and LAST < COMPLETE where COMPLETE is a number; white space (spaces, tabs)
/// around the value is allowed, nothing else is.
[[nodiscard]] std::optional<ContentRange> parse_content_range(std::string_view value);

}  // namespace oc::net
