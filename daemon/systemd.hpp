// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief What onecopyd asks of systemd, by hand (no libsystemd): readiness and watchdog
/// notifications, and the listening socket of socket activation.
#pragma once

#include <cstdint>
#include <string>

namespace oc::daemon {

/// Sends @p state ("READY=1", "STOPPING=1", ...) as one datagram to $NOTIFY_SOCKET; nothing
/// without it.
void sd_notify(const std::string& state);

/// @return the listening socket systemd passed (LISTEN_PID is this process, LISTEN_FDS >= 1:
/// fd 3), made non-blocking and close-on-exec, with the LISTEN_* variables unset; -1 without.
[[nodiscard]] int socket_from_systemd();

/// @return how often to send WATCHDOG=1, in microseconds: half of $WATCHDOG_USEC when it is
/// meant for this process, else @p fallback_ms (daemon_watchdog_ms); 0 for never.
[[nodiscard]] uint64_t watchdog_interval_us(uint32_t fallback_ms);

}  // namespace oc::daemon
