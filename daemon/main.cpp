// SPDX-License-Identifier: Apache-2.0
// onecopyd: serves Vortex scans to local clients over a SOCK_SEQPACKET Unix socket
// (daemon/PROTOCOL.md; the event loop is daemon/event_loop.hpp, the requests daemon/server.hpp).
#include <cstdio>
#include <string>

#include "config/defaults.hpp"
#include "config/log.hpp"
#include "daemon/config.hpp"
#include "daemon/event_loop.hpp"
#include "onecopy_build_config.h"

namespace {

constexpr const char* kUsage =
    "usage: onecopyd [--config PATH] [--socket PATH]\n"
    "       onecopyd --print-example-config | --version | --help\n"
    "Serves Vortex scans to the processes of this machine over a Unix socket.\n"
    "  --config PATH   the TOML config (default {}; a missing default file means the\n"
    "                  built-in defaults, a missing named one is an error)\n"
    "  --socket PATH   the socket to listen on (overrides daemon_socket); a socket passed\n"
    "                  by systemd (onecopyd.socket) is used instead when there is one\n"
    "  --print-example-config   every knob with its default, commented out\n"
    "ONECOPY_* variables override the file (`onecopy defaults` lists them); AWS_* give the\n"
    "S3 endpoint and credentials. One daemon serves one socket: a second one exits.\n";

int usage(FILE* to, int rc) {
  fmt::print(to, kUsage, oc::daemon::kDefaultConfigPath);
  return rc;
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
    } else if (a == "--help" || a == "-h") {
      return usage(stdout, 0);
    } else if (a == "--version") {
      fmt::print("onecopyd {}\n", OC_VERSION);
      return 0;
    } else {
      fmt::print(stderr, "onecopyd: unknown argument {}\n", a);
      return usage(stderr, 2);
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
