// SPDX-License-Identifier: Apache-2.0
#include "daemon/config.hpp"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "daemon/access.hpp"

// Debian's libtomlplusplus is built with exceptions; its parse error is caught right here.
#include <toml++/toml.h>

namespace oc::daemon {
namespace {

// The access policy's knobs are text the config table stores as is; their syntax is checked
// here, so that a bad rule is refused at load time with the key, file and line.
Result<void> check_access_knobs(const Defaults& d) {
  OC_TRY(AccessPolicy::create(d));
  return {};
}

}  // namespace

Result<void> apply_toml(Defaults& d, std::string_view toml, const std::string& origin) {
  toml::table table;
  try {
    table = toml::parse(toml, origin);
  } catch (const toml::parse_error& e) {
    return OC_ERROR(Errc::invalid, "{}:{}:{}: {}", origin, e.source().begin.line,
                    e.source().begin.column, e.description());
  }
  for (const auto& [key, node] : table) {
    const auto line = node.source().begin.line;
    const Knob* knob = nullptr;
    for (const Knob& k : knob_table()) {
      if (k.name == key.str()) knob = &k;
    }
    OC_EXPECT(knob != nullptr, invalid, "{}:{}: unknown key '{}' (`onecopy defaults` lists them)",
              origin, line, key.str());
    std::string text;
    if (const auto* s = node.as_string()) {
      text = s->get();
    } else if (const auto* i = node.as_integer()) {
      OC_EXPECT(i->get() >= 0, invalid, "{}:{}: {} must not be negative", origin, line, key.str());
      text = std::to_string(i->get());
    } else if (const auto* a = node.as_array(); a && !knob->join.empty()) {
      // A list knob: its items joined into the one text the knob takes.
      for (const auto& item : *a) {
        const auto* s = item.as_string();
        OC_EXPECT(s != nullptr, invalid, "{}:{}: {} must be an array of strings", origin, line,
                  key.str());
        if (!text.empty()) text += knob->join;
        text += s->get();
      }
    } else {
      return OC_ERROR(Errc::invalid, "{}:{}: {} must be a string or an integer{}", origin, line,
                      key.str(), knob->join.empty() ? "" : ", or an array of strings");
    }
    auto r = knob->apply(d, text);
    if (r.ok()) r = check_access_knobs(d);
    if (!r.ok()) return std::move(r.error()).with_context(fmt::format("{}:{}", origin, line));
  }
  return {};
}

Result<Defaults> load_config(const std::string& path, bool optional) {
  Defaults d = builtin_defaults();
  std::ifstream in(path);
  if (in) {
    std::stringstream ss;
    ss << in.rdbuf();
    OC_TRY(apply_toml(d, ss.str(), path));
  } else if (!optional) {
    return OC_ERROR(Errc::not_found, "cannot read config file {}", path);
  }
  for (const Knob& k : knob_table()) {
    const char* v = std::getenv(std::string(k.env).c_str());
    if (v && !(*v == '\0' && k.empty_env_is_unset)) {
      auto r = k.apply(d, v);
      if (r.ok()) r = check_access_knobs(d);
      if (!r.ok()) return std::move(r.error()).with_context(fmt::format("from ${}", k.env));
    }
  }
  return d;
}

std::string example_config() {
  std::string out =
      "# onecopyd configuration (/etc/onecopy/onecopyd.toml, or `onecopyd --config PATH`).\n"
      "# Every key is a row of onecopy's knob table; each line below shows the built-in default.\n"
      "# The environment variable named after each key overrides the file. Sizes take "
      "KiB/MiB/GiB.\n"
      "# Unknown keys are an error. SIGHUP re-reads this file and applies log_level, the client\n"
      "# limits and the access policy (daemon_allowed_*, daemon_s3_grants, daemon_http_hosts);\n"
      "# everything else takes effect at the next start.\n"
      "#\n"
      "# Who may read what (docs/security.md): a client reads local files through onecopyd\n"
      "# only by passing a descriptor it opened itself, so never more than it could read alone.\n"
      "# S3 is read with the daemon's credentials, but out of the box NO client may read any\n"
      "# bucket: grant prefixes to uids or gids with daemon_s3_grants, for example\n"
      "#   daemon_s3_grants = [\"uid=1000,1001: s3://team-a/\", \"gid=2000: s3://shared/eval/\"]\n"
      "# http(s) URLs are off until daemon_http_hosts names hosts (* admits public addresses\n"
      "# only; loopback, link-local and private hosts must be named).\n"
      "#\n"
      "# The S3 endpoint and credentials are the AWS_* environment, not keys of this file:\n"
      "# onecopyd.service reads them from /etc/onecopy/credentials.env (mode 0600).\n";
  for (const Knob& k : knob_table()) {
    out += fmt::format("\n# {}\n# env: {}\n# {} = \"{}\"\n", k.doc, k.env, k.name, k.default_value);
  }
  return out;
}

}  // namespace oc::daemon
