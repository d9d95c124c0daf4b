// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief The listening socket of onecopyd, claimed so that one daemon serves one path.
///
/// Binding a Unix socket path means removing whatever file is there first, and removing a live
/// daemon's socket file silently hands its future clients to the newcomer while the first
/// daemon goes on serving the ones it has. `ClaimedSocket::bind_path` refuses that:
///
/// - `PATH.lock` is opened and `flock`ed for the daemon's life, so two daemons starting at once
///   cannot both pass the checks below; the holder's pid is written into it for the message;
/// - a socket file at PATH that accepts a connection (a daemon that holds no lock: systemd's
///   socket unit, another build) is live: the claim fails and leaves it alone;
/// - a socket file nobody listens on (ECONNREFUSED: a daemon that was killed) is stale and
///   replaced;
/// - on destruction, the socket file is unlinked if PATH still names the socket this daemon
///   bound, and the lock file likewise.
///
/// A socket systemd passed (`adopt`) is systemd's to create and remove (RemoveOnStop=).
#pragma once

#include <sys/types.h>

#include <string>

#include "config/error.hpp"
#include "config/fd.hpp"

namespace oc::daemon {

class ClaimedSocket {
 public:
  ClaimedSocket() = default;
  ClaimedSocket(ClaimedSocket&&) noexcept;
  ClaimedSocket& operator=(ClaimedSocket&&) noexcept;
  ClaimedSocket(const ClaimedSocket&) = delete;
  ClaimedSocket& operator=(const ClaimedSocket&) = delete;
  /// Releases the path (see the file comment).
  ~ClaimedSocket();

  /// Binds and listens on a non-blocking SOCK_SEQPACKET socket at @p path (mode 0660).
  /// @return `Errc::io` with EADDRINUSE when a live server answers at @p path or another
  ///         onecopyd holds its lock (the message names the path and, where known, the pid);
  ///         `Errc::io` when the path exists and is not a socket, or a syscall fails.
  [[nodiscard]] static Result<ClaimedSocket> bind_path(const std::string& path);
  /// Takes a listening socket bound by someone else (systemd): never unlinked here.
  [[nodiscard]] static ClaimedSocket adopt(int fd);

  [[nodiscard]] int fd() const noexcept { return listen_.get(); }

 private:
  void release() noexcept;

  UniqueFd listen_, lock_;
  std::string path_;  // empty when adopted
  dev_t dev_ = 0;
  ino_t ino_ = 0;  // the bound socket file's identity, checked before it is unlinked
};

}  // namespace oc::daemon
