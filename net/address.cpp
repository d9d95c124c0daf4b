// SPDX-License-Identifier: Apache-2.0
// The ranges are those of the IANA special-purpose address registries (RFC 6890 and its
// updates, RFC 8190) that are not globally reachable, plus multicast.
#include "net/address.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstring>

namespace oc::net {
namespace {

struct V4Range {
  uint32_t base;
  int bits;
};

constexpr uint32_t v4(uint32_t a, uint32_t b, uint32_t c, uint32_t d) {
  return a << 24 | b << 16 | c << 8 | d;
}

constexpr V4Range kV4NotPublic[] = {
    {v4(0, 0, 0, 0), 8},        // "this network"
    {v4(10, 0, 0, 0), 8},       // private
    {v4(100, 64, 0, 0), 10},    // shared address space (carrier-grade NAT)
    {v4(127, 0, 0, 0), 8},      // loopback
    {v4(169, 254, 0, 0), 16},   // link-local, the cloud metadata services among them
    {v4(172, 16, 0, 0), 12},    // private
    {v4(192, 0, 0, 0), 24},     // IETF protocol assignments
    {v4(192, 0, 2, 0), 24},     // documentation (TEST-NET-1)
    {v4(192, 88, 99, 0), 24},   // deprecated 6to4 relay anycast
    {v4(192, 168, 0, 0), 16},   // private
    {v4(198, 18, 0, 0), 15},    // benchmarking
    {v4(198, 51, 100, 0), 24},  // documentation (TEST-NET-2)
    {v4(203, 0, 113, 0), 24},   // documentation (TEST-NET-3)
    {v4(224, 0, 0, 0), 4},      // multicast
    {v4(240, 0, 0, 0), 4},      // reserved, and the limited broadcast address
};

bool v4_public(uint32_t a) {
  for (const V4Range& r : kV4NotPublic) {
    const uint32_t mask = r.bits == 0 ? 0 : ~uint32_t{0} << (32 - r.bits);
    if ((a & mask) == r.base) return false;
  }
  return true;
}

uint32_t load_be32(const uint8_t* p) {
  return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | p[3];
}

bool starts_with(const uint8_t* a, std::initializer_list<uint8_t> prefix) {
  size_t i = 0;
  for (uint8_t b : prefix) {
    if (a[i++] != b) return false;
  }
  return true;
}

bool v6_public(const uint8_t* a) {
  static constexpr uint8_t kZero[16] = {};
  // :: (unspecified) and ::1 (loopback); other IPv4-compatible ::a.b.c.d by their IPv4 part.
  if (std::memcmp(a, kZero, 12) == 0) {
    const bool unspecified_or_loopback = std::memcmp(a, kZero, 15) == 0 && a[15] <= 1;
    return !unspecified_or_loopback && v4_public(load_be32(a + 12));
  }
  // IPv4-mapped ::ffff:a.b.c.d, and the NAT64 well-known prefix 64:ff9b::/96.
  if (starts_with(a, {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff}) ||
      starts_with(a, {0x00, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0})) {
    return v4_public(load_be32(a + 12));
  }
  if (a[0] == 0xff) return false;                                    // multicast
  if ((a[0] & 0xfe) == 0xfc) return false;                           // unique local fc00::/7
  if (a[0] == 0xfe && (a[1] & 0xc0) == 0x80) return false;           // link-local fe80::/10
  if (a[0] == 0xfe && (a[1] & 0xc0) == 0xc0) return false;           // site-local fec0::/10
  if (starts_with(a, {0x01, 0x00, 0, 0, 0, 0, 0, 0})) return false;  // discard 100::/64
  if (starts_with(a, {0x20, 0x01, 0x0d, 0xb8})) return false;        // documentation
  if (a[0] == 0x20 && a[1] == 0x01 && a[2] <= 0x01) return false;    // 2001::/23, IETF assignments
  if (starts_with(a, {0x20, 0x02})) {  // 6to4: judged by the embedded IPv4
    return v4_public(load_be32(a + 2));
  }
  return true;
}

}  // namespace

bool is_public_address(const sockaddr* addr) noexcept {
  if (addr == nullptr) return false;
  if (addr->sa_family == AF_INET) {
    sockaddr_in in{};
    std::memcpy(&in, addr, sizeof in);
    return v4_public(ntohl(in.sin_addr.s_addr));
  }
  if (addr->sa_family == AF_INET6) {
    sockaddr_in6 in6{};
    std::memcpy(&in6, addr, sizeof in6);
    return v6_public(in6.sin6_addr.s6_addr);
  }
  return false;
}

std::string address_text(const sockaddr* addr) {
  char text[INET6_ADDRSTRLEN] = "?";
  if (addr->sa_family == AF_INET) {
    sockaddr_in in{};
    std::memcpy(&in, addr, sizeof in);
    ::inet_ntop(AF_INET, &in.sin_addr, text, sizeof text);
  } else if (addr->sa_family == AF_INET6) {
    sockaddr_in6 in6{};
    std::memcpy(&in6, addr, sizeof in6);
    ::inet_ntop(AF_INET6, &in6.sin6_addr, text, sizeof text);
  }
  return text;
}

}  // namespace oc::net
