// SPDX-License-Identifier: Apache-2.0
// The provider chain, the caching provider, and the small helpers they share.
#include "net/credentials.hpp"

#include <charconv>

#include "config/defaults.hpp"
#include "config/log.hpp"

namespace oc::net {
namespace {

// Settings that mean the profile gets credentials some other way (assume-role, SSO, a helper
// process, web identity); onecopy does not implement those, and must not ignore them.
constexpr std::string_view kUnsupportedProfileKeys[] = {
    "role_arn", "credential_process", "sso_session", "sso_start_url", "web_identity_token_file"};

Result<ResolvedCredentials> from_env(const GetEnv& env) {
  auto id = env_value(env, "AWS_ACCESS_KEY_ID");
  auto secret = env_value(env, "AWS_SECRET_ACCESS_KEY");
  if (!id && !secret) return OC_ERROR(Errc::not_found, "AWS_ACCESS_KEY_ID is not set");
  OC_EXPECT(id && secret, invalid,
            "only one of AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY is set");
  return ResolvedCredentials{
      {*id, *secret, env_value(env, "AWS_SESSION_TOKEN").value_or("")}, false, "env", {}};
}

Result<ResolvedCredentials> from_profile(const CredentialsOptions& options, const GetEnv& env) {
  OC_ASSIGN_OR_RETURN(const SharedConfig c, load_shared_config(env, options.profile));
  const bool chosen = !options.profile.empty() || env_value(env, "AWS_PROFILE");
  OC_EXPECT(c.profile_found || !chosen, invalid, "profile '{}' is in neither {} nor {}", c.profile,
            c.credentials_path, c.config_path);
  const std::string source = "profile " + c.profile;
  const std::string* id = c.get("aws_access_key_id");
  const std::string* secret = c.get("aws_secret_access_key");
  if (id && secret && !id->empty() && !secret->empty()) {
    const std::string* token = c.get("aws_session_token");
    return ResolvedCredentials{{*id, *secret, token ? *token : ""}, false, source, {}};
  }
  OC_EXPECT(!id && !secret, invalid,
            "{} has only one of aws_access_key_id and aws_secret_access_key", source);
  for (std::string_view key : kUnsupportedProfileKeys) {
    OC_EXPECT(!c.get(key), unsupported,
              "{} uses {}, which onecopy does not support; export the credentials "
              "(e.g. `aws configure export-credentials --format env`)",
              source, key);
  }
  if (!c.profile_found) return OC_ERROR(Errc::not_found, "{}: no such profile", source);
  return OC_ERROR(Errc::not_found, "{} has no aws_access_key_id", source);
}

int two_digits(std::string_view s, size_t at) {
  int v = -1;
  if (at + 2 <= s.size()) {
    auto [p, ec] = std::from_chars(s.data() + at, s.data() + at + 2, v);
    if (ec != std::errc() || p != s.data() + at + 2) v = -1;
  }
  return v;
}

}  // namespace

Result<std::chrono::system_clock::time_point> parse_iso8601(std::string_view t) {
  using namespace std::chrono;
  int year = -1;
  if (t.size() >= 20) {
    auto [p, ec] = std::from_chars(t.data(), t.data() + 4, year);
    if (ec != std::errc() || p != t.data() + 4) year = -1;
  }
  const bool shape = year >= 0 && t[4] == '-' && t[7] == '-' && (t[10] == 'T' || t[10] == 't') &&
                     t[13] == ':' && t[16] == ':';
  const int month = two_digits(t, 5), day = two_digits(t, 8), hour = two_digits(t, 11),
            minute = two_digits(t, 14), second = two_digits(t, 17);
  const year_month_day ymd{std::chrono::year(year),
                           std::chrono::month(static_cast<unsigned>(month)),
                           std::chrono::day(static_cast<unsigned>(day))};
  OC_EXPECT(shape && ymd.ok() && hour >= 0 && hour < 24 && minute >= 0 && minute < 60 &&
                second >= 0 && second <= 60,
            invalid, "'{}' is not an ISO 8601 timestamp like 2026-11-29T12:00:00Z", t);
  std::string_view rest = t.substr(19);
  if (!rest.empty() && rest.front() == '.') {  // fractional seconds: dropped, expiry is coarse
    rest.remove_prefix(1);
    while (!rest.empty() && std::isdigit(static_cast<unsigned char>(rest.front())))
      rest.remove_prefix(1);
  }
  minutes offset{0};
  if (rest.size() == 6 && (rest[0] == '+' || rest[0] == '-') && rest[3] == ':' &&
      two_digits(rest, 1) >= 0 && two_digits(rest, 4) >= 0) {
    offset = hours(two_digits(rest, 1)) + minutes(two_digits(rest, 4));
    if (rest[0] == '-') offset = -offset;
  } else {
    OC_EXPECT(rest == "Z" || rest == "z", invalid, "'{}' must end in Z or a +hh:mm offset", t);
  }
  return system_clock::time_point(sys_days(ymd) + hours(hour) + minutes(minute) + seconds(second) -
                                  offset);
}

std::string redact(std::string_view secret) {
  constexpr size_t kShown = 4;
  if (secret.empty()) return "(none)";
  // Showing 4 characters of a short secret would give much of it away.
  if (secret.size() < 4 * kShown) return "…";
  return std::string(secret.substr(0, kShown)) + "…";
}

Result<ResolvedCredentials> resolve_credentials(const CredentialsOptions& options,
                                                const GetEnv& env, const HttpFetch& fetch) {
  if (options.anonymous) return ResolvedCredentials{{}, true, "anonymous", {}};
  if (options.explicit_credentials) {
    const Credentials& c = *options.explicit_credentials;
    OC_EXPECT(!c.access_key.empty() && !c.secret_key.empty(), invalid,
              "explicit credentials need both an access key and a secret key");
    return ResolvedCredentials{c, false, "explicit", {}};
  }
  std::vector<std::string> tried;
  const std::pair<std::string_view, std::function<Result<ResolvedCredentials>()>> sources[] = {
      {"env", [&] { return from_env(env); }},
      {"profile", [&] { return from_profile(options, env); }},
      {"container", [&] { return container_credentials(env, fetch); }},
      {"imds", [&] { return imds_credentials(env, fetch); }},
  };
  for (const auto& [name, source] : sources) {
    auto r = source();
    if (r.ok()) return r;
    // Metadata is the last resort and is simply absent off EC2, so any failure there counts as
    // "nothing found" rather than as a broken configuration.
    if (r.error().code() != Errc::not_found && name != "imds") {
      return std::move(r.error()).with_context(fmt::format("AWS credentials from {}", name));
    }
    tried.push_back(fmt::format("{}: {}", name, r.error().message()));
  }
  return OC_ERROR(
      Errc::not_found,
      "no AWS credentials found (tried {}); set some, or use anonymous access for public buckets",
      fmt::join(tried, "; "));
}

CredentialsProvider::CredentialsProvider(CredentialsOptions options, GetEnv env, HttpFetch fetch,
                                         WallClock clock)
    : options_(std::move(options)),
      env_(std::move(env)),
      fetch_(std::move(fetch)),
      clock_(clock ? std::move(clock)
                   : WallClock([] { return std::chrono::system_clock::now(); })) {}

Result<ResolvedCredentials> CredentialsProvider::get() {
  std::unique_lock lock(mu_);
  const auto margin = std::chrono::seconds(defaults().credentials_refresh_margin_s);
  const auto valid = [&](std::chrono::system_clock::time_point at) {
    return cached_ && (!cached_->expiration || at < *cached_->expiration);
  };
  auto now = clock_();
  if (cached_ && (!cached_->expiration || now + margin < *cached_->expiration)) return *cached_;
  if (refreshing_) {
    // Someone is refreshing: the current credentials serve until they expire.
    if (valid(now)) return *cached_;
    Waiter w;
    waiters_.push_back(&w);
    lock.unlock();
    w.wait_until(Deadline::max());  // a refresh always ends, its fetches under their timeouts
    lock.lock();
    if (last_) return *last_;
    return OC_ERROR(Errc::io, "AWS credentials: the refresh ended without a result");
  }
  refreshing_ = true;
  ++refreshes_;
  lock.unlock();
  auto fresh = resolve_credentials(options_, env_, fetch_);
  lock.lock();
  refreshing_ = false;
  now = clock_();
  Result<ResolvedCredentials> out = fresh;
  if (fresh.ok()) {
    log::get().debug("AWS credentials from {}", fresh->source);
    cached_ = *fresh;
  } else if (valid(now)) {
    log::get().warn(
        "refreshing AWS credentials failed, using the current ones until they expire: {}",
        fresh.error().to_string());
    out = *cached_;
  }
  last_ = out;
  for (Waiter* w : waiters_) w->notify();
  waiters_.clear();
  return out;
}

uint64_t CredentialsProvider::refreshes() const {
  std::lock_guard lock(mu_);
  return refreshes_;
}

}  // namespace oc::net
