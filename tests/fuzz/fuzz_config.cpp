// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: onecopyd.toml text applied over the defaults (daemon::apply_toml), the
// knob parsers and the access rules behind them included.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "config/defaults.hpp"
#include "daemon/config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  oc::Defaults d = oc::defaults();
  (void)oc::daemon::apply_toml(d, {reinterpret_cast<const char*>(data), size}, "fuzz.toml");
  return 0;
}
