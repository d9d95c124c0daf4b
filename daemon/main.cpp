// SPDX-License-Identifier: Apache-2.0
// onecopyd: serves Vortex scans to local clients over a SOCK_SEQPACKET Unix socket
// (daemon/PROTOCOL.md; the event loop is daemon/event_loop.hpp, the requests daemon/server.hpp).
#include <cstdio>
#include <string>

#include "config/defaults.hpp"
#include "config/log.hpp"
#include "daemon/config.hpp"
#include "daemon/event_loop.hpp"

namespace {

int usage() {
  fmt::print(stderr,
             "usage: onecopyd [--config PATH] [--socket PATH] [--print-example-config]\n"
             "Serves Vortex scans over a Unix socket (daemon/PROTOCOL.md).\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace oc::daemon;
  std::string config_path = kDefaultConfigPath, socket;
  bool optional = true;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--config" && i + 1 < argc) {
      config_path = argv[++i];
      optional = false;
    } else if (a == "--socket" && i + 1 < argc) {
      socket = argv[++i];
    } else if (a == "--print-example-config") {
      fmt::print("{}", example_config());
      return 0;
    } else {
      return usage();
    }
  }
  auto cfg = load_config(config_path, optional);
  if (!cfg.ok()) {
    fmt::print(stderr, "onecopyd: {}\n", cfg.error().to_string());
    return 1;
  }
  if (!socket.empty()) {
    for (const auto& k : oc::knob_table()) {
      if (k.name != "daemon_socket") continue;
      if (auto r = k.apply(*cfg, socket); !r.ok()) {
        fmt::print(stderr, "onecopyd: --socket: {}\n", r.error().to_string());
        return 1;
      }
    }
  }
  // Every knob of the file and the environment, format/ and net/ ones included, takes effect
  // wherever it is read; set before any thread starts.
  oc::set_defaults(*cfg);
  if (auto r = oc::log::init(cfg->log_level); !r.ok()) return 1;
  EventLoop loop(*cfg, config_path, optional);
  if (auto r = loop.setup(); !r.ok()) {
    oc::log::get().critical("{}", r.error().to_string());
    return 1;
  }
  return loop.run();
}
