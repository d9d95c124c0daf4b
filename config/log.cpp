// SPDX-License-Identifier: Apache-2.0
#include "config/log.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>

namespace oc::log {
namespace {

std::shared_ptr<spdlog::logger> make_logger() {
  // stderr keeps stdout clean for `onecopy scan` output that is piped into other tools.
  auto logger = spdlog::stderr_color_mt("onecopy");
  logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
  logger->set_level(spdlog::level::info);
  return logger;
}

}  // namespace

spdlog::logger& get() {
  static std::shared_ptr<spdlog::logger> logger = make_logger();
  return *logger;
}

Result<void> init(std::string_view level) {
  const auto lvl = spdlog::level::from_str(std::string(level));
  // from_str maps unknown names to "off"; only accept "off" when it was asked for.
  OC_EXPECT(lvl != spdlog::level::off || level == "off", invalid, "unknown log level '{}'", level);
  get().set_level(lvl);
  return {};
}

}  // namespace oc::log
