// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief onecopyd's access policy: who may connect, and what each client may read through it.
///
/// The trust model (docs/security.md): a client reads through onecopyd only what it could
/// read itself, plus the object storage the operator grants it.
/// - **Local files** are never opened by the daemon for a client. The client library opens the
///   file in its own process, with its own permissions, and passes the descriptor; a request
///   naming a local path is `denied`.
/// - **S3** is read with the daemon's credentials, only under the prefixes that
///   `daemon_s3_grants` grants to the peer's uid or one of its groups:
///   @code
///     daemon_s3_grants = ["uid=1000,1001: s3://team-a/", "gid=2000: s3://shared/eval/", "*:
///     s3://public/"]
///   @endcode
///   A prefix is a string prefix of the key, as in IAM policies (`s3://b/data` also covers
///   `s3://b/data2/x`; end it with '/' to grant one "directory"), and `s3://bucket` grants the
///   whole bucket. Keys with "." or ".." path segments are refused: some servers normalise them.
/// - **RADOS objects** (`rados://pool/object`) are read with the daemon's Ceph identity, only
///   under the object-name prefixes that `daemon_rados_grants` grants, with the same rules
///   (`"gid=2000: rados://training/web-"`).
/// - **http(s) URLs** are read only from hosts `daemon_http_hosts` lists. `*` admits any host
///   whose addresses are all public; a host named there (`mirror.internal`, `10.0.0.5:8080`) is
///   admitted whatever it resolves to. So loopback, link-local (the cloud metadata service) and
///   private addresses are fetched for a client only when the operator named them.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "config/defaults.hpp"
#include "config/error.hpp"

namespace oc::daemon {

/// Who is on the other end of a Unix socket.
struct Peer {
  pid_t pid = 0;
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;  ///< supplementary groups (SO_PEERGROUPS), when the kernel has it
};

/// Reads the credentials of @p fd's peer: SO_PEERCRED, then SO_PEERGROUPS (Linux 4.13+; without
/// it only the primary gid counts).
[[nodiscard]] Result<Peer> peer_of(int fd);

/// One rule of `daemon_s3_grants` (a bucket and a key prefix) or `daemon_rados_grants` (a pool
/// and an object-name prefix): who, and which prefix of which bucket or pool.
struct ObjectGrant {
  enum class Who : uint8_t { anyone, uid, gid };
  Who who = Who::anyone;
  std::vector<uint32_t> ids;
  std::string bucket, prefix;
};

/// Parses `daemon_s3_grants`: rules `WHO: s3://bucket[/prefix] ...` separated by ';', WHO being
/// `*`, `uid=N[,N...]` or `gid=N[,N...]`. Empty text grants nothing. `invalid` names the rule.
[[nodiscard]] Result<std::vector<ObjectGrant>> parse_s3_grants(std::string_view text);
/// Parses `daemon_rados_grants`: the same rules with `rados://pool[/prefix]` (the grant's
/// `bucket` holds the pool).
[[nodiscard]] Result<std::vector<ObjectGrant>> parse_rados_grants(std::string_view text);

/// One entry of `daemon_http_hosts`.
struct HttpHost {
  bool any = false;   ///< `*`: any host, public addresses only
  std::string host;   ///< lower-case; IPv6 literals in brackets
  uint16_t port = 0;  ///< 0: any port
};

/// Parses `daemon_http_hosts`: entries separated by ',' or spaces, each `*`, `host` or
/// `host:port`. Empty text admits no host. `invalid` names the entry.
[[nodiscard]] Result<std::vector<HttpHost>> parse_http_hosts(std::string_view text);

/// How a granted http(s) URL is fetched.
struct UrlAccess {
  bool public_only = true;  ///< the host was admitted by `*` only: public addresses only
};

class AccessPolicy {
 public:
  /// Builds the policy from `daemon_allowed_uids`, `daemon_allowed_gids`, `daemon_s3_grants`
  /// and `daemon_http_hosts`; `invalid` names the knob whose text does not parse.
  [[nodiscard]] static Result<AccessPolicy> create(const Defaults& d);

  /// Whether @p peer may connect at all (either allowed list admits it; a group list admits
  /// the primary gid or a supplementary group).
  [[nodiscard]] bool may_connect(const Peer& peer) const;

  /// May @p peer read object @p uri (`s3://bucket/key`, `rados://pool/object` or an http(s)
  /// URL) through the daemon?
  /// @return how to fetch it; `denied` with the reason and the knob that would grant it, or
  ///         `invalid` for a URI that is not an object URL (a local path: clients pass those as
  ///         descriptors).
  [[nodiscard]] Result<UrlAccess> check_object(const Peer& peer, std::string_view uri) const;

  /// May @p peer list @p pattern (an s3:// or rados:// prefix or glob)? The part of the key before
  /// the first wildcard must lie under a prefix granted to it. Local patterns are `invalid`: the
  /// client expands them itself.
  [[nodiscard]] Result<void> check_list(const Peer& peer, std::string_view pattern) const;

  /// Whether `s3://bucket/key` is under a prefix granted to @p peer (listing results are
  /// filtered with it).
  [[nodiscard]] bool may_read_key(const Peer& peer, std::string_view bucket,
                                  std::string_view key) const;
  /// Whether `rados://pool/object` is under a prefix `daemon_rados_grants` grants to @p peer.
  [[nodiscard]] bool may_read_rados(const Peer& peer, std::string_view pool,
                                    std::string_view object) const;

 private:
  std::string allowed_uids_, allowed_gids_;
  std::vector<ObjectGrant> grants_;
  std::vector<ObjectGrant> rados_grants_;
  std::vector<HttpHost> hosts_;
};

/// @return whether @p key has a "." or ".." segment between its '/'s.
[[nodiscard]] bool has_dot_segment(std::string_view key) noexcept;

}  // namespace oc::daemon
