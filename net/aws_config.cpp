// SPDX-License-Identifier: Apache-2.0
#include "net/aws_config.hpp"

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "config/strings.hpp"

namespace oc::net {
namespace {

// INI lines: a value's surrounding blanks and a CRLF file's '\r' are not part of it.
constexpr std::string_view kBlanks = " \t\r";

bool is_space(char c) { return kBlanks.find(c) != std::string_view::npos; }

std::string_view trim_blanks(std::string_view s) { return trim(s, kBlanks); }

// The SDKs treat '#' or ';' as a comment only after whitespace, so values such as URLs with
// fragments or tokens with ';' survive.
std::string_view strip_inline_comment(std::string_view v) {
  for (size_t i = 1; i < v.size(); ++i) {
    if ((v[i] == '#' || v[i] == ';') && is_space(v[i - 1])) return trim_blanks(v.substr(0, i));
  }
  return v;
}

// Maps a section header's inner text to a profile name; nullopt for sections that hold no
// profile (config-file sections like [sso-session x] or [services y]).
std::optional<std::string> profile_of_section(std::string_view inner, AwsFileKind kind) {
  if (kind == AwsFileKind::credentials || inner == "default") return std::string(inner);
  constexpr std::string_view kPrefix = "profile";
  if (inner.substr(0, kPrefix.size()) == kPrefix && inner.size() > kPrefix.size() &&
      is_space(inner[kPrefix.size()])) {
    return std::string(trim_blanks(inner.substr(kPrefix.size())));
  }
  return std::nullopt;
}

struct IniParser {
  AwsFileKind kind = AwsFileKind::config;
  std::string_view origin;
  ProfileMap profiles;
  bool in_section = false;
  ProfileSettings* current = nullptr;  // null inside a non-profile section
  std::string parent;                  // key whose empty value opened a nested block
  std::string last_key;                // key a continuation line extends

  Result<void> section(std::string_view t, size_t line) {
    const size_t close = t.find(']');
    OC_EXPECT(close != std::string_view::npos, invalid, "{}:{}: unterminated section header",
              origin, line);
    const std::string_view after = trim_blanks(t.substr(close + 1));
    OC_EXPECT(after.empty() || after.front() == '#' || after.front() == ';', invalid,
              "{}:{}: unexpected text after the section header", origin, line);
    const std::string_view inner = trim_blanks(t.substr(1, close - 1));
    OC_EXPECT(!inner.empty(), invalid, "{}:{}: empty section name", origin, line);
    auto name = profile_of_section(inner, kind);
    current = name && !name->empty() ? &profiles[*name] : nullptr;
    in_section = true;
    parent.clear();
    last_key.clear();
    return {};
  }

  Result<void> setting(std::string_view t, size_t line, bool nested) {
    const size_t eq = t.find('=');
    OC_EXPECT(eq != std::string_view::npos, invalid, "{}:{}: expected 'key = value'", origin, line);
    const std::string key = lower(trim_blanks(t.substr(0, eq)));
    OC_EXPECT(!key.empty(), invalid, "{}:{}: a setting has no name", origin, line);
    const std::string_view value = strip_inline_comment(trim_blanks(t.substr(eq + 1)));
    if (nested) {
      if (current) (*current)[parent + "." + key] = std::string(value);
      return {};
    }
    if (current) (*current)[key] = std::string(value);
    parent = value.empty() ? key : std::string{};
    last_key = value.empty() ? std::string{} : key;
    return {};
  }

  Result<void> line(std::string_view raw, size_t line_no) {
    const std::string_view t = trim_blanks(raw);
    if (t.empty() || t.front() == '#' || t.front() == ';') return {};
    const bool indented = is_space(raw.front());
    if (!indented && t.front() == '[') return section(t, line_no);
    OC_EXPECT(in_section, invalid, "{}:{}: a setting before any [section]", origin, line_no);
    if (indented && !parent.empty()) return setting(t, line_no, true);
    if (indented && !last_key.empty()) {
      if (current) (*current)[last_key] += "\n" + std::string(strip_inline_comment(t));
      return {};
    }
    OC_EXPECT(!indented, invalid, "{}:{}: an indented line with nothing to continue", origin,
              line_no);
    return setting(t, line_no, false);
  }
};

std::string expand_home(std::string path, const std::optional<std::string>& home) {
  if (home && path.size() >= 2 && path[0] == '~' && path[1] == '/') return *home + path.substr(1);
  return path;
}

// A missing file is an empty one: most machines have neither file.
Result<std::string> read_optional_file(const std::string& path) {
  if (path.empty()) return std::string{};
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) {
    if (errno == ENOENT || errno == ENOTDIR) return std::string{};
    return errno_error(-errno, fmt::format("opening {}", path), __FILE__, __LINE__);
  }
  std::string text;
  char buf[4096];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, f.get())) > 0) text.append(buf, n);
  if (std::ferror(f.get()))
    return errno_error(-errno, fmt::format("reading {}", path), __FILE__, __LINE__);
  return text;
}

}  // namespace

GetEnv process_env() {
  return [](std::string_view name) -> std::optional<std::string> {
    const char* v = std::getenv(std::string(name).c_str());
    return v ? std::optional<std::string>(v) : std::nullopt;
  };
}

std::optional<std::string> env_value(const GetEnv& env, std::string_view name) {
  auto v = env(name);
  return v && !v->empty() ? v : std::nullopt;
}

Result<ProfileMap> parse_aws_ini(std::string_view text, AwsFileKind kind, std::string_view origin) {
  IniParser p;
  p.kind = kind;
  p.origin = origin;
  size_t line_no = 0;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    OC_TRY(p.line(text.substr(0, nl), ++line_no));
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
  }
  return std::move(p.profiles);
}

const std::string* SharedConfig::get(std::string_view key) const {
  auto it = settings.find(key);
  return it == settings.end() ? nullptr : &it->second;
}

Result<SharedConfig> load_shared_config(const GetEnv& env, std::string_view profile) {
  const auto home = env("HOME");
  SharedConfig c;
  if (!profile.empty())
    c.profile = std::string(profile);
  else
    c.profile = env_value(env, "AWS_PROFILE").value_or("default");
  c.config_path = expand_home(
      env_value(env, "AWS_CONFIG_FILE").value_or(home ? *home + "/.aws/config" : ""), home);
  c.credentials_path = expand_home(env_value(env, "AWS_SHARED_CREDENTIALS_FILE")
                                       .value_or(home ? *home + "/.aws/credentials" : ""),
                                   home);

  OC_ASSIGN_OR_RETURN(const std::string config_text, read_optional_file(c.config_path));
  OC_ASSIGN_OR_RETURN(const std::string creds_text, read_optional_file(c.credentials_path));
  OC_ASSIGN_OR_RETURN(const ProfileMap config,
                      parse_aws_ini(config_text, AwsFileKind::config, c.config_path));
  OC_ASSIGN_OR_RETURN(const ProfileMap creds,
                      parse_aws_ini(creds_text, AwsFileKind::credentials, c.credentials_path));
  for (const ProfileMap* m : {&config, &creds}) {
    if (auto it = m->find(c.profile); it != m->end()) {
      c.profile_found = true;
      for (const auto& [k, v] : it->second) c.settings[k] = v;
    }
  }
  return c;
}

void fuzz_parse_aws_config(std::span<const uint8_t> bytes) {
  const std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  (void)parse_aws_ini(text, AwsFileKind::config, "fuzz");
  (void)parse_aws_ini(text, AwsFileKind::credentials, "fuzz");
}

}  // namespace oc::net
