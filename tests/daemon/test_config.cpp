// SPDX-License-Identifier: Apache-2.0
// onecopyd's TOML config: knob names, type and range checks, unknown keys with their line.
#include <catch2/catch.hpp>
#include <map>

#include "daemon/config.hpp"

using namespace oc::daemon;

TEST_CASE("daemon config: knobs by table name", "[daemon]") {
  oc::Defaults d = oc::builtin_defaults();
  auto r = apply_toml(d,
                      "log_level = \"debug\"\n"
                      "daemon_socket = \"/tmp/x.sock\"\n"
                      "daemon_client_max_batches_in_flight = 3\n"
                      "daemon_pool_bytes = \"2GiB\"\n",
                      "t.toml");
  REQUIRE(r.ok());
  CHECK(d.log_level == "debug");
  CHECK(d.daemon_socket == "/tmp/x.sock");
  CHECK(d.daemon_client_max_batches_in_flight == 3);
  CHECK(d.daemon_pool_bytes == (uint64_t{2} << 30));
}

TEST_CASE("daemon config: errors name the key and line", "[daemon]") {
  oc::Defaults d = oc::builtin_defaults();
  auto unknown = apply_toml(d, "log_level = \"info\"\n\nno_such_knob = 1\n", "t.toml");
  REQUIRE(!unknown.ok());
  CHECK(unknown.error().to_string().find("t.toml:3") != std::string::npos);
  CHECK(unknown.error().to_string().find("no_such_knob") != std::string::npos);

  auto range = apply_toml(d, "daemon_max_clients = 0\n", "t.toml");
  REQUIRE(!range.ok());
  CHECK(range.error().to_string().find("daemon_max_clients") != std::string::npos);

  auto type = apply_toml(d, "daemon_max_clients = true\n", "t.toml");
  REQUIRE(!type.ok());
  auto syntax = apply_toml(d, "log_level = \n", "t.toml");
  REQUIRE(!syntax.ok());
  auto ids = apply_toml(d, "daemon_allowed_uids = \"0,x\"\n", "t.toml");
  REQUIRE(!ids.ok());
  // Only an empty variable counts as unset; an empty socket in the file is a mistake.
  auto socket = apply_toml(d, "daemon_socket = \"\"\n", "t.toml");
  REQUIRE(!socket.ok());
  CHECK(socket.error().to_string().find("daemon_socket") != std::string::npos);
}

TEST_CASE("daemon config: the example parses", "[daemon]") {
  oc::Defaults d = oc::builtin_defaults();
  REQUIRE(apply_toml(d, example_config(), "example").ok());
}

TEST_CASE("daemon knobs take environment overrides and reject bad values", "[daemon]") {
  auto env = [](std::map<std::string, std::string> m) {
    return [m](std::string_view name) -> std::optional<std::string> {
      auto it = m.find(std::string(name));
      return it == m.end() ? std::nullopt : std::optional<std::string>(it->second);
    };
  };
  auto d = oc::defaults_from_env(env({{"ONECOPY_SOCKET", "/tmp/o.sock"},
                                      {"ONECOPY_DAEMON_ALLOWED_UIDS", "0,1000"},
                                      {"ONECOPY_DAEMON_CLIENT_MAX_BYTES_IN_FLIGHT", "64MiB"}}));
  REQUIRE(d.ok());
  CHECK(d->daemon_socket == "/tmp/o.sock");
  CHECK(d->daemon_allowed_uids == "0,1000");
  CHECK(d->daemon_client_max_bytes_in_flight == (uint64_t{64} << 20));
  CHECK(oc::builtin_defaults().daemon_socket == "/run/onecopy/onecopyd.sock");
  CHECK(oc::builtin_defaults().daemon_slab_bytes == (uint64_t{64} << 20));
  CHECK(oc::builtin_defaults().daemon_metrics_port == 0);
  CHECK(oc::builtin_defaults().daemon_metrics_address == "127.0.0.1");
  auto m = oc::defaults_from_env(env({{"ONECOPY_DAEMON_SLAB_BYTES", "6MiB"},
                                      {"ONECOPY_DAEMON_METRICS_PORT", "9187"},
                                      {"ONECOPY_DAEMON_METRICS_ADDRESS", "127.0.0.2"}}));
  REQUIRE(m.ok());
  CHECK(m->daemon_slab_bytes == (uint64_t{6} << 20));
  CHECK(m->daemon_metrics_port == 9187);
  CHECK(m->daemon_metrics_address == "127.0.0.2");
  // ONECOPY_SOCKET= (empty) tells clients to read in process: the knob keeps its default.
  auto empty = oc::defaults_from_env(env({{"ONECOPY_SOCKET", ""}}));
  REQUIRE(empty.ok());
  CHECK(empty->daemon_socket == "/run/onecopy/onecopyd.sock");
  for (auto [var, bad] : std::vector<std::pair<std::string, std::string>>{
           {"ONECOPY_SOCKET", std::string(200, 'x')},
           {"ONECOPY_DAEMON_ALLOWED_GIDS", "1,,2"},
           {"ONECOPY_DAEMON_MAX_MESSAGE_BYTES", "1KiB"},
           {"ONECOPY_DAEMON_MAX_CLIENTS", "0"},
           {"ONECOPY_DAEMON_SLAB_BYTES", "1MiB"},
           {"ONECOPY_DAEMON_SLAB_BYTES", "3MiB"},  // not a whole number of hugepages
           {"ONECOPY_DAEMON_METRICS_PORT", "65536"},
           {"ONECOPY_DAEMON_METRICS_ADDRESS", "0.0.0.0"},
           {"ONECOPY_DAEMON_METRICS_ADDRESS", "10.1.2.3"},
           {"ONECOPY_DAEMON_METRICS_ADDRESS", "localhost"},
           {"ONECOPY_DAEMON_METRICS_MAX_REQUEST_BYTES", "16"}}) {
    INFO(var << "=" << bad);
    auto r = oc::defaults_from_env(env({{var, bad}}));
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code() == oc::Errc::invalid);
    CHECK(r.error().to_string().find(var) != std::string::npos);
  }
}
