// SPDX-License-Identifier: Apache-2.0
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "daemon/access.hpp"

using namespace oc::daemon;
using oc::Errc;

namespace {

AccessPolicy policy(std::string grants, std::string hosts = "", std::string uids = "*",
                    std::string gids = "*") {
  oc::Defaults d = oc::builtin_defaults();
  d.daemon_s3_grants = std::move(grants);
  d.daemon_http_hosts = std::move(hosts);
  d.daemon_allowed_uids = std::move(uids);
  d.daemon_allowed_gids = std::move(gids);
  auto p = AccessPolicy::create(d);
  REQUIRE(p.ok());
  return std::move(p).value();
}

Peer peer(uid_t uid, gid_t gid, std::vector<gid_t> groups = {}) {
  return Peer{1, uid, gid, std::move(groups)};
}

}  // namespace

TEST_CASE("the default policy grants no S3 prefix and no http host", "[daemon][access]") {
  auto p = AccessPolicy::create(oc::builtin_defaults());
  REQUIRE(p.ok());
  auto s3 = p->check_object(peer(0, 0), "s3://bucket/data.vortex");
  REQUIRE_FALSE(s3.ok());
  CHECK(s3.error().code() == Errc::denied);
  CHECK(s3.error().message().find("daemon_s3_grants") != std::string::npos);
  auto http = p->check_object(peer(0, 0), "http://example.com/x.vortex");
  REQUIRE_FALSE(http.ok());
  CHECK(http.error().code() == Errc::denied);
  CHECK(http.error().message().find("daemon_http_hosts") != std::string::npos);
  CHECK(p->may_connect(peer(1234, 1234)));  // everyone may connect by default
}

TEST_CASE("S3 grants match by uid, primary gid or supplementary group, and by prefix",
          "[daemon][access]") {
  auto p = policy(
      "uid=1000,1001: s3://team-a/ s3://shared/eval/; gid=2000: s3://team-b; "
      "*: s3://public/open");
  CHECK(p.check_object(peer(1000, 1), "s3://team-a/x.vortex").ok());
  CHECK(p.check_object(peer(1001, 1), "s3://shared/eval/deep/x.vortex").ok());
  CHECK_FALSE(p.check_object(peer(1000, 1), "s3://shared/train/x.vortex").ok());
  CHECK_FALSE(p.check_object(peer(1002, 1), "s3://team-a/x.vortex").ok());
  CHECK(p.check_object(peer(5, 2000), "s3://team-b/any/key").ok());
  CHECK(p.check_object(peer(5, 7, {3, 2000}), "s3://team-b/any/key").ok());
  CHECK_FALSE(p.check_object(peer(5, 7, {3}), "s3://team-b/any/key").ok());
  // A prefix is a string prefix of the key, as in IAM policies.
  CHECK(p.check_object(peer(9, 9), "s3://public/open-data/x").ok());
  CHECK_FALSE(p.check_object(peer(9, 9), "s3://public/closed/x").ok());
  // A grant's bucket is the whole bucket name, not a prefix of it.
  CHECK_FALSE(p.check_object(peer(1000, 1), "s3://team-ab/x.vortex").ok());
  auto denied = p.check_object(peer(1002, 1), "s3://team-a/x.vortex");
  CHECK(denied.error().code() == Errc::denied);
  CHECK(denied.error().message().find("uid 1002") != std::string::npos);
}

TEST_CASE("keys with dot segments are never read or listed", "[daemon][access]") {
  auto p = policy("*: s3://bkt/team/");
  for (const char* uri : {"s3://bkt/team/../secret/x", "s3://bkt/team/./x", "s3://bkt/team/.."}) {
    INFO(uri);
    auto r = p.check_object(peer(1, 1), uri);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code() == Errc::denied);
  }
  CHECK(p.check_object(peer(1, 1), "s3://bkt/team/..x/.y").ok());  // dots inside a name are fine
  CHECK_FALSE(p.check_list(peer(1, 1), "s3://bkt/team/../").ok());
  CHECK(has_dot_segment("a/../b"));
  CHECK(has_dot_segment(".."));
  CHECK_FALSE(has_dot_segment("a/..b/c."));
}

TEST_CASE("listings must lie under a granted prefix", "[daemon][access]") {
  auto p = policy("uid=7: s3://bkt/team/");
  CHECK(p.check_list(peer(7, 7), "s3://bkt/team/").ok());
  CHECK(p.check_list(peer(7, 7), "s3://bkt/team/part-*.vortex").ok());
  auto wide = p.check_list(peer(7, 7), "s3://bkt/te*");
  REQUIRE_FALSE(wide.ok());
  CHECK(wide.error().code() == Errc::denied);
  CHECK_FALSE(p.check_list(peer(7, 7), "s3://bkt/").ok());
  CHECK_FALSE(p.check_list(peer(8, 8), "s3://bkt/team/").ok());
  auto local = p.check_list(peer(7, 7), "/etc/*");
  REQUIRE_FALSE(local.ok());
  CHECK(local.error().code() == Errc::invalid);
  CHECK(p.may_read_key(peer(7, 7), "bkt", "team/x"));
  CHECK_FALSE(p.may_read_key(peer(7, 7), "bkt", "other/x"));
}

TEST_CASE("local paths are refused: clients pass descriptors", "[daemon][access]") {
  auto p = policy("*: s3://bkt/");
  for (const char* uri : {"/etc/shadow", "relative.vortex", "file:///etc/passwd", ""}) {
    INFO(uri);
    auto r = p.check_object(peer(0, 0), uri);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code() == Errc::denied);
  }
}

TEST_CASE("http hosts: * admits public addresses only, a named host any address",
          "[daemon][access]") {
  auto any = policy("", "*");
  auto r = any.check_object(peer(1, 1), "https://data.example.com/x.vortex");
  REQUIRE(r.ok());
  CHECK(r->public_only);
  auto named = policy("", "*, Mirror.Internal, 127.0.0.1:8080, [::1]");
  auto m = named.check_object(peer(1, 1), "http://mirror.internal/x.vortex");
  REQUIRE(m.ok());
  CHECK_FALSE(m->public_only);
  auto port = named.check_object(peer(1, 1), "http://127.0.0.1:8080/x");
  REQUIRE(port.ok());
  CHECK_FALSE(port->public_only);
  // Another port of a host named with one falls back to '*': public addresses only.
  auto other = named.check_object(peer(1, 1), "http://127.0.0.1:9090/x");
  REQUIRE(other.ok());
  CHECK(other->public_only);
  CHECK_FALSE(named.check_object(peer(1, 1), "http://[::1]:5/x")->public_only);
  auto none = policy("", "mirror.internal");
  auto refused = none.check_object(peer(1, 1), "http://169.254.169.254/latest/meta-data/");
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().code() == Errc::denied);
}

TEST_CASE("denials never echo a presigned URL's signature", "[daemon][access]") {
  auto p = policy("", "");
  auto r = p.check_object(peer(1, 1), "https://h/k?X-Amz-Signature=s3cr3t&X-Amz-Credential=AKIA");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().to_string().find("s3cr3t") == std::string::npos);
  CHECK(r.error().to_string().find("AKIA") == std::string::npos);
}

TEST_CASE("grant and host syntax errors name the rule", "[daemon][access]") {
  for (const char* bad : {"s3://bkt/", "uid=: s3://bkt/", "uid=x: s3://bkt/", "root: s3://bkt/",
                          "*:", "*: s3://BKT/", "*: http://b/", "*: s3://bkt/../x"}) {
    INFO(bad);
    auto r = parse_s3_grants(bad);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code() == Errc::invalid);
    CHECK(r.error().to_string().find("daemon_s3_grants") != std::string::npos);
  }
  auto ok = parse_s3_grants("  *: s3://bkt ;; uid=1: s3://ccc/d/  s3://eee/  ");
  REQUIRE(ok.ok());
  REQUIRE(ok->size() == 3);
  CHECK((*ok)[0].prefix.empty());
  CHECK((*ok)[1].bucket == "ccc");
  CHECK((*ok)[1].prefix == "d/");
  for (const char* bad : {"http://x", "a/b", "h:99999", "h?x"}) {
    INFO(bad);
    auto r = parse_http_hosts(bad);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message().find("daemon_http_hosts") != std::string::npos);
  }
  CHECK(parse_http_hosts("").value().empty());
}

TEST_CASE("allowed uid and gid lists admit a peer by either, groups included", "[daemon][access]") {
  auto p = policy("", "", "0,1000", "2000");
  CHECK(p.may_connect(peer(0, 0)));
  CHECK(p.may_connect(peer(1000, 5)));
  CHECK(p.may_connect(peer(5, 2000)));
  CHECK(p.may_connect(peer(5, 5, {2000})));
  CHECK_FALSE(p.may_connect(peer(5, 5, {3})));
  auto nobody = policy("", "", "", "");
  CHECK_FALSE(nobody.may_connect(peer(0, 0)));
}

TEST_CASE("peer_of reads this process's own credentials over a socketpair", "[daemon][access]") {
  int sv[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv) == 0);
  auto p = peer_of(sv[0]);
  ::close(sv[0]);
  ::close(sv[1]);
  REQUIRE(p.ok());
  CHECK(p->uid == ::getuid());
  CHECK(p->gid == ::getgid());
  CHECK(p->pid == ::getpid());
}

TEST_CASE("RADOS grants: pools and object-name prefixes, by uid or group, reads and listings",
          "[daemon][access]") {
  oc::Defaults d = oc::builtin_defaults();
  d.daemon_allowed_uids = "*";
  d.daemon_rados_grants = "uid=1000: rados://train/web- rados://eval; gid=2000: rados://shared/a/";
  auto made = AccessPolicy::create(d);
  REQUIRE(made.ok());
  const AccessPolicy& p = *made;
  CHECK(p.check_object(peer(1000, 1), "rados://train/web-0001.vortex").ok());
  CHECK(p.check_object(peer(1000, 1), "rados://eval/anything/at/all.vortex").ok());
  CHECK(p.check_object(peer(7, 7, {2000}), "rados://shared/a/x.vortex").ok());
  for (const auto& [who, uri] : std::vector<std::pair<Peer, std::string>>{
           {peer(1001, 1), "rados://train/web-0001.vortex"},   // another uid
           {peer(1000, 1), "rados://train/books-1.vortex"},    // outside the prefix
           {peer(1000, 1), "rados://training/web-1.vortex"},   // another pool
           {peer(7, 7, {2000}), "rados://shared/b/x.vortex"},  // outside the group's prefix
       }) {
    auto r = p.check_object(who, uri);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code() == Errc::denied);
    CHECK(r.error().message().find("daemon_rados_grants") != std::string::npos);
  }
  // S3 grants do not reach RADOS, nor RADOS grants S3.
  CHECK_FALSE(p.check_object(peer(1000, 1), "s3://train/web-0001.vortex").ok());
  CHECK(p.check_list(peer(1000, 1), "rados://train/web-*").ok());
  CHECK(p.check_list(peer(1000, 1), "rados://eval/").ok());
  CHECK_FALSE(p.check_list(peer(1000, 1), "rados://train/").ok());  // more than web-
  CHECK_FALSE(p.check_list(peer(1000, 1), "rados://train/*").ok());
  CHECK(p.may_read_rados(peer(1000, 1), "train", "web-9"));
  CHECK_FALSE(p.may_read_rados(peer(1000, 1), "train", "we"));
  auto none = AccessPolicy::create(oc::builtin_defaults());
  REQUIRE(none.ok());
  CHECK_FALSE(none->check_object(peer(0, 0), "rados://train/web-1.vortex").ok());
}

TEST_CASE("RADOS grant syntax errors name the knob and the rule", "[daemon][access]") {
  for (const char* bad : {"uid=1: s3://b/", "uid=x: rados://p/", "nobody rados://p/",
                          "uid=1: rados:///obj", "uid=1:"}) {
    auto r = parse_rados_grants(bad);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code() == Errc::invalid);
    CHECK(r.error().to_string().find("daemon_rados_grants") != std::string::npos);
  }
  auto ok = parse_rados_grants("*: rados://pool");
  REQUIRE(ok.ok());
  REQUIRE(ok->size() == 1);
  CHECK((*ok)[0].bucket == "pool");
  CHECK((*ok)[0].prefix.empty());
}
