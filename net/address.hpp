// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief Which IP addresses are public: the check that keeps onecopyd from fetching, on a
/// client's behalf, from loopback, link-local (the instance metadata service) or private hosts.
///
/// A request for a client's URL resolves its host and connects only to addresses that pass
/// `is_public_address` (`ConnectOptions::public_only`), so a name that resolves, or is rebound,
/// to an internal address is refused at the address actually connected to.
#pragma once

#include <sys/socket.h>

#include <string>

namespace oc::net {

/// @return true when @p addr (AF_INET or AF_INET6) is a globally routable unicast address:
/// not unspecified, loopback (127/8, ::1), private (10/8, 172.16/12, 192.168/16, fc00::/7),
/// shared (100.64/10), link-local (169.254/16, fe80::/10), benchmarking (198.18/15),
/// documentation (192.0.2/24, 198.51.100/24, 203.0.113/24, 2001:db8::/32), IETF protocol
/// assignments (192.0.0/24), multicast, reserved (240/4, broadcast), discard (100::/64),
/// site-local (fec0::/10), nor an IPv4-mapped, IPv4-compatible or NAT64 (64:ff9b::/96) IPv6
/// address whose IPv4 part is one of those. Any other family is not public.
[[nodiscard]] bool is_public_address(const sockaddr* addr) noexcept;

/// @return @p addr as text ("10.0.0.1", "::1"), for messages.
[[nodiscard]] std::string address_text(const sockaddr* addr);

}  // namespace oc::net
