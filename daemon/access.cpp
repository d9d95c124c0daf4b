// SPDX-License-Identifier: Apache-2.0
#include "daemon/access.hpp"

#include <sys/socket.h>

#include <algorithm>
#include <cctype>
#include <charconv>

#include "config/strings.hpp"
#include "net/rados.hpp"
#include "net/url.hpp"

namespace oc::daemon {
namespace {

// Splits on any of @p seps, dropping empty pieces.
std::vector<std::string_view> split(std::string_view s, std::string_view seps) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find_first_of(seps, start);
    if (end == std::string_view::npos) end = s.size();
    if (auto piece = trim(s.substr(start, end - start)); !piece.empty()) out.push_back(piece);
    start = end + 1;
  }
  return out;
}

Result<std::vector<uint32_t>> parse_ids(std::string_view text, std::string_view rule,
                                        std::string_view knob) {
  std::vector<uint32_t> ids;
  for (std::string_view id : split(text, ",")) {
    uint32_t n = 0;
    auto [p, ec] = std::from_chars(id.data(), id.data() + id.size(), n);
    OC_EXPECT(ec == std::errc() && p == id.data() + id.size(), invalid,
              "{}: '{}' in rule '{}' is not a numeric id", knob, id, rule);
    ids.push_back(n);
  }
  OC_EXPECT(!ids.empty(), invalid, "{}: rule '{}' names no id", knob, rule);
  return ids;
}

// daemon_allowed_uids / daemon_allowed_gids: "*", "" or comma-separated ids (validated by the
// knob table).
bool listed(const std::string& list, uint32_t id) {
  if (list == "*") return true;
  for (std::string_view item : split(list, ",")) {
    uint32_t n = 0;
    auto [p, ec] = std::from_chars(item.data(), item.data() + item.size(), n);
    if (ec == std::errc() && p == item.data() + item.size() && n == id) return true;
  }
  return false;
}

bool grant_covers(const ObjectGrant& g, const Peer& peer) {
  switch (g.who) {
    case ObjectGrant::Who::anyone:
      return true;
    case ObjectGrant::Who::uid:
      return std::find(g.ids.begin(), g.ids.end(), peer.uid) != g.ids.end();
    case ObjectGrant::Who::gid:
      for (uint32_t id : g.ids) {
        if (id == peer.gid ||
            std::find(peer.groups.begin(), peer.groups.end(), id) != peer.groups.end()) {
          return true;
        }
      }
      return false;
  }
  return false;
}

std::string who(const Peer& peer) { return fmt::format("uid {} (gid {})", peer.uid, peer.gid); }

}  // namespace

Result<Peer> peer_of(int fd) {
  ucred cred{};
  socklen_t len = sizeof cred;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
    return Error(Errc::io, "SO_PEERCRED", __FILE__, __LINE__, errno);
  }
  Peer p{cred.pid, cred.uid, cred.gid, {}};
  // A peer has at most NGROUPS_MAX (65536) groups; ERANGE says how many bytes it needs.
  std::vector<gid_t> groups(64);
  for (int attempt = 0; attempt < 2; ++attempt) {
    socklen_t bytes = static_cast<socklen_t>(groups.size() * sizeof(gid_t));
    if (::getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups.data(), &bytes) == 0) {
      groups.resize(bytes / sizeof(gid_t));
      p.groups = std::move(groups);
      break;
    }
    if (errno != ERANGE || bytes / sizeof(gid_t) > 65536) break;
    groups.resize(bytes / sizeof(gid_t));
  }
  return p;
}

bool has_dot_segment(std::string_view key) noexcept {
  size_t start = 0;
  while (start <= key.size()) {
    size_t end = key.find('/', start);
    if (end == std::string_view::npos) end = key.size();
    const std::string_view seg = key.substr(start, end - start);
    if (seg == "." || seg == "..") return true;
    start = end + 1;
  }
  return false;
}

namespace {

// Rules `WHO: URI ...` joined by ';' for knob @p knob; @p parse turns one URI into the grant's
// bucket (or pool) and prefix.
template <class ParseUri>
Result<std::vector<ObjectGrant>> parse_grants(std::string_view text, std::string_view knob,
                                              std::string_view form, ParseUri parse) {
  std::vector<ObjectGrant> out;
  for (std::string_view rule : split(text, ";")) {
    const size_t colon = rule.find(':');
    OC_EXPECT(colon != std::string_view::npos, invalid, "{}: rule '{}' is not 'WHO: {} ...'", knob,
              rule, form);
    const std::string_view who_text = trim(rule.substr(0, colon));
    ObjectGrant proto;
    if (who_text == "*") {
      proto.who = ObjectGrant::Who::anyone;
    } else if (who_text.starts_with("uid=")) {
      proto.who = ObjectGrant::Who::uid;
      OC_ASSIGN_OR_RETURN(proto.ids, parse_ids(who_text.substr(4), rule, knob));
    } else if (who_text.starts_with("gid=")) {
      proto.who = ObjectGrant::Who::gid;
      OC_ASSIGN_OR_RETURN(proto.ids, parse_ids(who_text.substr(4), rule, knob));
    } else {
      return OC_ERROR(Errc::invalid, "{}: '{}' in rule '{}' is not *, uid=N[,N] or gid=N[,N]", knob,
                      who_text, rule);
    }
    const auto prefixes = split(rule.substr(colon + 1), " \t");
    OC_EXPECT(!prefixes.empty(), invalid, "{}: rule '{}' grants no prefix", knob, rule);
    for (std::string_view prefix : prefixes) {
      ObjectGrant g = proto;
      auto parsed = parse(prefix, g);
      if (!parsed.ok()) {
        return std::move(parsed.error()).with_context(fmt::format("{} rule '{}'", knob, rule));
      }
      out.push_back(std::move(g));
    }
  }
  return out;
}

}  // namespace

Result<std::vector<ObjectGrant>> parse_s3_grants(std::string_view text) {
  return parse_grants(text, "daemon_s3_grants", "s3://bucket/prefix",
                      [](std::string_view prefix, ObjectGrant& g) -> Result<void> {
                        OC_ASSIGN_OR_RETURN(net::S3Uri uri, net::parse_s3_uri(prefix));
                        OC_EXPECT(!has_dot_segment(uri.key), invalid,
                                  "daemon_s3_grants: prefix '{}' has a '.' or '..' segment",
                                  prefix);
                        g.bucket = std::move(uri.bucket);
                        g.prefix = std::move(uri.key);
                        return {};
                      });
}

Result<std::vector<ObjectGrant>> parse_rados_grants(std::string_view text) {
  return parse_grants(text, "daemon_rados_grants", "rados://pool/prefix",
                      [](std::string_view prefix, ObjectGrant& g) -> Result<void> {
                        // `rados://pool` alone grants the whole pool.
                        const std::string whole = prefix.find('/', 8) == std::string_view::npos
                                                      ? std::string(prefix) + "/"
                                                      : std::string(prefix);
                        OC_ASSIGN_OR_RETURN(
                            net::RadosUri uri,
                            net::parse_rados_uri(whole, /*allow_empty_object=*/true));
                        g.bucket = std::move(uri.pool);
                        g.prefix = std::move(uri.object);
                        return {};
                      });
}

Result<std::vector<HttpHost>> parse_http_hosts(std::string_view text) {
  std::vector<HttpHost> out;
  for (std::string_view entry : split(text, ", \t")) {
    if (entry == "*") {
      out.push_back({true, "", 0});
      continue;
    }
    // Parsed as the authority of a URL, so that hosts compare the way URLs spell them.
    auto url = net::parse_url(fmt::format("http://{}/", entry));
    OC_EXPECT(url.ok() && url->path == "/" && url->raw_query.empty(), invalid,
              "daemon_http_hosts: '{}' is not *, a host or host:port", entry);
    out.push_back({false, url->host, url->explicit_port ? url->port : uint16_t{0}});
  }
  return out;
}

Result<AccessPolicy> AccessPolicy::create(const Defaults& d) {
  AccessPolicy p;
  p.allowed_uids_ = d.daemon_allowed_uids;
  p.allowed_gids_ = d.daemon_allowed_gids;
  OC_ASSIGN_OR_RETURN(p.grants_, parse_s3_grants(d.daemon_s3_grants));
  OC_ASSIGN_OR_RETURN(p.rados_grants_, parse_rados_grants(d.daemon_rados_grants));
  OC_ASSIGN_OR_RETURN(p.hosts_, parse_http_hosts(d.daemon_http_hosts));
  return p;
}

bool AccessPolicy::may_connect(const Peer& peer) const {
  if (listed(allowed_uids_, peer.uid) || listed(allowed_gids_, peer.gid)) return true;
  return std::any_of(peer.groups.begin(), peer.groups.end(),
                     [&](gid_t g) { return listed(allowed_gids_, g); });
}

bool AccessPolicy::may_read_key(const Peer& peer, std::string_view bucket,
                                std::string_view key) const {
  if (has_dot_segment(key)) return false;
  return std::any_of(grants_.begin(), grants_.end(), [&](const ObjectGrant& g) {
    return g.bucket == bucket && key.starts_with(g.prefix) && grant_covers(g, peer);
  });
}

bool AccessPolicy::may_read_rados(const Peer& peer, std::string_view pool,
                                  std::string_view object) const {
  return std::any_of(rados_grants_.begin(), rados_grants_.end(), [&](const ObjectGrant& g) {
    return g.bucket == pool && object.starts_with(g.prefix) && grant_covers(g, peer);
  });
}

Result<UrlAccess> AccessPolicy::check_object(const Peer& peer, std::string_view uri) const {
  if (uri.starts_with("rados://")) {
    OC_ASSIGN_OR_RETURN(net::RadosUri r, net::parse_rados_uri(uri));
    OC_EXPECT(may_read_rados(peer, r.pool, r.object), denied,
              "{} may not read {} through onecopyd: no rule of daemon_rados_grants grants it",
              who(peer), uri);
    return UrlAccess{false};
  }
  if (uri.starts_with("s3://")) {
    OC_ASSIGN_OR_RETURN(net::S3Uri s3, net::parse_s3_uri(uri));
    OC_EXPECT(!s3.key.empty(), invalid, "{}: no object key", uri);
    OC_EXPECT(!has_dot_segment(s3.key), denied,
              "{}: keys with '.' or '..' segments are not read through onecopyd", uri);
    OC_EXPECT(may_read_key(peer, s3.bucket, s3.key), denied,
              "{} may not read {} through onecopyd: no rule of daemon_s3_grants grants it",
              who(peer), uri);
    return UrlAccess{false};
  }
  if (uri.starts_with("http://") || uri.starts_with("https://")) {
    OC_ASSIGN_OR_RETURN(net::Url url, net::parse_url(uri));
    bool any = false;
    for (const HttpHost& h : hosts_) {
      if (h.any) {
        any = true;
      } else if (h.host == lower(url.host) && (h.port == 0 || h.port == url.port)) {
        return UrlAccess{false};
      }
    }
    OC_EXPECT(any, denied, "{}: host {} is not one onecopyd reads URLs from (daemon_http_hosts)",
              net::redact_url(uri), url.host);
    return UrlAccess{true};
  }
  return OC_ERROR(Errc::denied,
                  "onecopyd does not open paths for its clients: the client opens a local file "
                  "itself and passes its descriptor (this request named '{}' without one)",
                  uri);
}

Result<void> AccessPolicy::check_list(const Peer& peer, std::string_view pattern) const {
  if (pattern.starts_with("rados://")) {
    OC_ASSIGN_OR_RETURN(net::RadosUri r,
                        net::parse_rados_uri(pattern, /*allow_empty_object=*/true));
    const std::string prefix = r.object.substr(0, r.object.find_first_of("*?["));
    const bool granted =
        std::any_of(rados_grants_.begin(), rados_grants_.end(), [&](const ObjectGrant& g) {
          return g.bucket == r.pool && prefix.starts_with(g.prefix) && grant_covers(g, peer);
        });
    OC_EXPECT(granted, denied,
              "{} may not list {} through onecopyd: no rule of daemon_rados_grants grants all of "
              "rados://{}/{}",
              who(peer), pattern, r.pool, prefix);
    return {};
  }
  OC_EXPECT(pattern.starts_with("s3://"), invalid,
            "onecopyd lists s3:// and rados:// patterns only; the client expands local patterns "
            "itself (this request named '{}')",
            pattern);
  OC_ASSIGN_OR_RETURN(net::S3Uri s3, net::parse_s3_uri(pattern));
  const std::string prefix = s3.key.substr(0, s3.key.find_first_of("*?["));
  OC_EXPECT(!has_dot_segment(prefix), denied,
            "{}: prefixes with '.' or '..' segments are not listed through onecopyd", pattern);
  const bool granted = std::any_of(grants_.begin(), grants_.end(), [&](const ObjectGrant& g) {
    return g.bucket == s3.bucket && std::string_view(prefix).starts_with(g.prefix) &&
           grant_covers(g, peer);
  });
  OC_EXPECT(granted, denied,
            "{} may not list {} through onecopyd: no rule of daemon_s3_grants grants all of "
            "s3://{}/{}",
            who(peer), pattern, s3.bucket, prefix);
  return {};
}

}  // namespace oc::daemon
