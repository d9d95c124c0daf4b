// SPDX-License-Identifier: Apache-2.0
// An injected environment for tests: a fixed map instead of the process's variables.
#pragma once

#include <map>
#include <string>

#include "net/aws_config.hpp"

namespace oc::test {

using EnvMap = std::map<std::string, std::string, std::less<>>;

inline net::GetEnv env_of(EnvMap vars) {
  return [vars = std::move(vars)](std::string_view name) -> std::optional<std::string> {
    auto it = vars.find(name);
    return it == vars.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
}

}  // namespace oc::test
