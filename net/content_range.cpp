// SPDX-License-Identifier: Apache-2.0
#include "net/content_range.hpp"

#include <strings.h>

#include <charconv>

#include "config/strings.hpp"

namespace oc::net {

std::optional<ContentRange> parse_content_range(std::string_view value) {
  std::string_view v = trim(value, " \t");
  constexpr std::string_view kUnit = "bytes ";
  if (v.size() < kUnit.size() || strncasecmp(v.data(), kUnit.data(), kUnit.size()) != 0) {
    return std::nullopt;
  }
  v.remove_prefix(kUnit.size());
  const char* end = v.data() + v.size();
  ContentRange cr;
  const auto a = std::from_chars(v.data(), end, cr.first);
  if (a.ec != std::errc() || a.ptr == end || *a.ptr != '-') return std::nullopt;
  const auto b = std::from_chars(a.ptr + 1, end, cr.last);
  if (b.ec != std::errc() || b.ptr == end || *b.ptr != '/' || cr.last < cr.first) {
    return std::nullopt;
  }
  const std::string_view complete(b.ptr + 1, static_cast<size_t>(end - b.ptr - 1));
  if (complete == "*") return cr;
  uint64_t length = 0;
  const auto c = std::from_chars(complete.data(), complete.data() + complete.size(), length);
  if (c.ec != std::errc() || c.ptr != end || complete.empty() || cr.last >= length) {
    return std::nullopt;
  }
  cr.complete = length;
  return cr;
}

}  // namespace oc::net
