// SPDX-License-Identifier: Apache-2.0
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/un.h>

#include <catch2/catch.hpp>

#include "net/address.hpp"

using oc::net::address_text;
using oc::net::is_public_address;

namespace {

sockaddr_storage parse(const char* text) {
  sockaddr_storage ss{};
  auto* in = reinterpret_cast<sockaddr_in*>(&ss);
  auto* in6 = reinterpret_cast<sockaddr_in6*>(&ss);
  if (::inet_pton(AF_INET, text, &in->sin_addr) == 1) {
    in->sin_family = AF_INET;
  } else {
    REQUIRE(::inet_pton(AF_INET6, text, &in6->sin6_addr) == 1);
    in6->sin6_family = AF_INET6;
  }
  return ss;
}

bool is_public(const char* text) {
  const sockaddr_storage ss = parse(text);
  return is_public_address(reinterpret_cast<const sockaddr*>(&ss));
}

}  // namespace

TEST_CASE("internal IPv4 addresses are not public", "[net][address]") {
  for (const char* a :
       {"0.0.0.0",     "10.1.2.3",        "100.64.0.1", "100.127.255.255", "127.0.0.1",
        "127.255.0.9", "169.254.169.254", "172.16.0.1", "172.31.255.255",  "192.0.0.8",
        "192.0.2.1",   "192.168.1.1",     "198.18.0.1", "198.19.255.1",    "198.51.100.7",
        "203.0.113.9", "224.0.0.1",       "239.1.1.1",  "240.0.0.1",       "255.255.255.255"}) {
    INFO(a);
    CHECK_FALSE(is_public(a));
  }
}

TEST_CASE("routable IPv4 addresses are public, right at the edges of the ranges",
          "[net][address]") {
  for (const char* a :
       {"1.1.1.1", "8.8.8.8", "9.255.255.255", "11.0.0.0", "100.63.255.255", "100.128.0.0",
        "126.255.255.255", "128.0.0.0", "169.253.255.255", "172.15.255.255", "172.32.0.0",
        "192.167.255.255", "192.169.0.0", "198.17.255.255", "198.20.0.0", "223.255.255.255"}) {
    INFO(a);
    CHECK(is_public(a));
  }
}

TEST_CASE("internal IPv6 addresses, and IPv6 forms of internal IPv4 ones, are not public",
          "[net][address]") {
  for (const char* a : {"::", "::1", "fe80::1", "febf::1", "fec0::1", "fc00::1", "fd12:3456::1",
                        "ff02::1", "100::1", "2001:db8::1", "2001::1", "::ffff:127.0.0.1",
                        "::ffff:169.254.169.254", "::ffff:10.0.0.1", "64:ff9b::a00:1",
                        "::127.0.0.1", "2002:7f00:1::1", "2002:a9fe:a9fe::1"}) {
    INFO(a);
    CHECK_FALSE(is_public(a));
  }
  for (const char* a : {"2606:4700:4700::1111", "2a00:1450:4001::1", "::ffff:8.8.8.8",
                        "64:ff9b::808:808", "2002:808:808::1"}) {
    INFO(a);
    CHECK(is_public(a));
  }
}

TEST_CASE("addresses of other families are not public, and addresses print", "[net][address]") {
  sockaddr_un un{};
  un.sun_family = AF_UNIX;
  CHECK_FALSE(is_public_address(reinterpret_cast<const sockaddr*>(&un)));
  CHECK_FALSE(is_public_address(nullptr));
  const sockaddr_storage v4 = parse("10.0.0.1"), v6 = parse("fe80::1");
  CHECK(address_text(reinterpret_cast<const sockaddr*>(&v4)) == "10.0.0.1");
  CHECK(address_text(reinterpret_cast<const sockaddr*>(&v6)) == "fe80::1");
}
