// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief The AWS shared configuration files, `~/.aws/config` and `~/.aws/credentials`.
///
/// Both are INI files. In `config`, profiles are `[default]` and `[profile NAME]` (other section
/// kinds such as `[sso-session x]` are ignored); in `credentials`, they are `[NAME]`. Lines are
/// `key = value`; `#` and `;` start comment lines, and also inline comments when preceded by
/// whitespace. An indented line under a key with an empty value is a nested setting and is
/// stored as "parent.child" (so `s3 =` / `  addressing_style = path` gives "s3.addressing_style").
/// Keys are lower-cased; values are trimmed. Error messages give the file and line number but
/// never the line's text, which may hold a secret.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "config/error.hpp"

namespace oc::net {

/// Looks an environment variable up; nullopt when unset. Injected so tests control the
/// environment (see `defaults_from_env`).
using GetEnv = std::function<std::optional<std::string>(std::string_view)>;

/// @return a `GetEnv` over the process environment.
[[nodiscard]] GetEnv process_env();

/// @return @p name's value through @p env; nullopt when unset or empty, as the AWS SDKs treat
///         an empty variable.
[[nodiscard]] std::optional<std::string> env_value(const GetEnv& env, std::string_view name);

/// Settings of one profile, key to value.
using ProfileSettings = std::map<std::string, std::string, std::less<>>;
/// Every profile of one file, by profile name.
using ProfileMap = std::map<std::string, ProfileSettings, std::less<>>;

/// Which file an INI text came from; decides how section headers name profiles.
enum class AwsFileKind { config, credentials };

/// Parses one shared file's text. @p origin (a path) is used in error messages only.
/// @return `Errc::invalid` naming @p origin and the line for a line that is neither a section,
///         a setting, a nested setting nor a comment.
[[nodiscard]] Result<ProfileMap> parse_aws_ini(std::string_view text, AwsFileKind kind,
                                               std::string_view origin);

/// The selected profile's settings, merged from both files.
struct SharedConfig {
  std::string profile;           ///< explicit choice, else $AWS_PROFILE, else "default"
  std::string config_path;       ///< $AWS_CONFIG_FILE, else $HOME/.aws/config ("" without HOME)
  std::string credentials_path;  ///< $AWS_SHARED_CREDENTIALS_FILE, else $HOME/.aws/credentials
  bool profile_found = false;    ///< the profile has a section in at least one file
  ProfileSettings settings;      ///< credentials-file values win over config-file values

  /// @return the value of @p key in the profile, or nullptr.
  [[nodiscard]] const std::string* get(std::string_view key) const;
};

/// Reads both files (a missing file counts as empty) and selects @p profile (when non-empty),
/// else $AWS_PROFILE, else "default". A leading "~/" in the path variables is expanded with $HOME.
/// @return `Errc::io` for an unreadable file, `Errc::invalid` for a malformed one.
[[nodiscard]] Result<SharedConfig> load_shared_config(const GetEnv& env,
                                                      std::string_view profile = {});

/// Fuzzing entry point: parses @p bytes as both file kinds.
void fuzz_parse_aws_config(std::span<const uint8_t> bytes);

}  // namespace oc::net
