// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>
#include <map>

#include "config/defaults.hpp"

using oc::Errc;

namespace {
auto env_of(std::map<std::string, std::string> m) {
  return [m](std::string_view name) -> std::optional<std::string> {
    auto it = m.find(std::string(name));
    return it == m.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
}
}  // namespace

TEST_CASE("every built-in default parses and validates", "[config]") {
  oc::Defaults d{};
  for (const auto& k : oc::knob_table()) {
    INFO(k.name);
    auto r = k.apply(d, k.default_value);
    REQUIRE(r.ok());
    CHECK(k.env.substr(0, 8) == "ONECOPY_");
    CHECK(!k.doc.empty());
  }
}

TEST_CASE("built-in defaults carry the documented values", "[config]") {
  const auto d = oc::builtin_defaults();
  CHECK(d.log_level == "info");
  CHECK(d.file_coalesce_distance == 1024 * 1024);
  CHECK(d.file_coalesce_max == 4 * 1024 * 1024);
  CHECK(d.object_coalesce_max == 16 * 1024 * 1024);
  CHECK(d.max_array_depth == 64);
  CHECK(d.max_expr_depth == 128);
}

TEST_CASE("environment overrides each knob and rejects bad values", "[config]") {
  auto d = oc::defaults_from_env(env_of({{"ONECOPY_FILE_COALESCE_MAX", "8MiB"},
                                         {"ONECOPY_LOG_LEVEL", "DEBUG"},
                                         {"ONECOPY_IO_QUEUE_DEPTH", "128"}}));
  REQUIRE(d.ok());
  CHECK(d->file_coalesce_max == 8 * 1024 * 1024);
  CHECK(d->log_level == "debug");
  CHECK(d->io_queue_depth == 128);

  for (auto [var, bad] : std::vector<std::pair<std::string, std::string>>{
           {"ONECOPY_IO_QUEUE_DEPTH", "0"},
           {"ONECOPY_IO_QUEUE_DEPTH", "lots"},
           {"ONECOPY_IO_QUEUE_DEPTH", "-3"},
           {"ONECOPY_FILE_COALESCE_MAX", "12 parsecs"},
           {"ONECOPY_LOG_LEVEL", "chatty"},
           {"ONECOPY_MAX_ARRAY_DEPTH", "99999999999999999999"},
           {"ONECOPY_MAX_EXPR_DEPTH", "2"}}) {
    INFO(var << "=" << bad);
    auto r = oc::defaults_from_env(env_of({{var, bad}}));
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code() == Errc::invalid);
    CHECK(r.error().to_string().find(var) != std::string::npos);
  }
}

TEST_CASE("sizes parse with binary units in any case", "[config]") {
  CHECK(*oc::parse_size("4096") == 4096);
  CHECK(*oc::parse_size("64KiB") == 64 * 1024);
  CHECK(*oc::parse_size("1mib") == 1024 * 1024);
  CHECK(*oc::parse_size("2G") == 2ull << 30);
  CHECK_FALSE(oc::parse_size("").ok());
  CHECK_FALSE(oc::parse_size("MiB").ok());
  CHECK_FALSE(oc::parse_size("17000000000T").ok());
}
