// SPDX-License-Identifier: Apache-2.0
#include "client/human_units.hpp"

#include <fmt/format.h>

#include <array>

namespace oc::client {

std::string human_bytes(uint64_t bytes) {
  if (bytes < 1024) return fmt::format("{} B", bytes);
  constexpr std::array<const char*, 6> kUnits{"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = static_cast<double>(bytes) / 1024;
  size_t unit = 0;
  while (v >= 1024 && unit + 1 < kUnits.size()) {
    v /= 1024;
    ++unit;
  }
  // Three significant digits; a value that rounds up to 1024 is shown in the next unit.
  std::string text = v < 10    ? fmt::format("{:.2f}", v)
                     : v < 100 ? fmt::format("{:.1f}", v)
                               : fmt::format("{:.0f}", v);
  if (text == "1024" && unit + 1 < kUnits.size()) return fmt::format("1.00 {}", kUnits[unit + 1]);
  return fmt::format("{} {}", text, kUnits[unit]);
}

std::string human_duration(uint64_t ms) {
  if (ms < 1000) return fmt::format("{} ms", ms);
  const uint64_t s = ms / 1000;
  if (s < 60) return fmt::format("{} s", s);
  if (s < 3600) return fmt::format("{} min {} s", s / 60, s % 60);
  if (s < 86'400) return fmt::format("{} h {} min", s / 3600, s % 3600 / 60);
  return fmt::format("{} d {} h", s / 86'400, s % 86'400 / 3600);
}

}  // namespace oc::client
