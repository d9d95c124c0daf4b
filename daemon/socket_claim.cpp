// SPDX-License-Identifier: Apache-2.0
#include "daemon/socket_claim.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <utility>

#include "config/log.hpp"

namespace oc::daemon {
namespace {

std::string lock_path(const std::string& path) { return path + ".lock"; }

bool same_file(const struct stat& a, const struct stat& b) {
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

Error in_use(const std::string& path, long pid, const char* by) {
  const std::string who = pid > 0 ? fmt::format(" (pid {})", pid) : "";
  return Error(Errc::io,
               fmt::format("{}{} already serves {}: stop it first, or give this daemon another "
                           "socket (--socket, daemon_socket)",
                           by, who, path),
               __FILE__, __LINE__, EADDRINUSE);
}

// The pid the holder wrote into the lock file, 0 when it is unreadable.
long holder_pid(int fd) {
  char text[24] = {};
  const ssize_t n = ::pread(fd, text, sizeof text - 1, 0);
  return n > 0 ? std::strtol(text, nullptr, 10) : 0;
}

// Opens PATH.lock without following a link (the directory may be shared, /tmp say) and locks it.
// A daemon of another user may own the file: it is then opened read-only, which flock allows.
// The loop covers a holder that unlinked the file between our open and our flock: the lock we
// got is on a file nobody else will open again, so the path is tried afresh.
Result<UniqueFd> take_lock(const std::string& path) {
  const std::string lock = lock_path(path);
  for (int attempt = 0; attempt < 8; ++attempt) {
    UniqueFd fd(::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644));
    if (!fd.valid() && errno == EACCES)
      fd.reset(::open(lock.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    if (!fd.valid()) {
      return Error(Errc::io, fmt::format("cannot open the lock file {}", lock), __FILE__, __LINE__,
                   errno);
    }
    struct stat held {
    }, named{};
    OC_EXPECT(::fstat(fd.get(), &held) == 0 && S_ISREG(held.st_mode), io,
              "the lock file {} is not a regular file", lock);
    if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
      if (errno == EWOULDBLOCK) return in_use(path, holder_pid(fd.get()), "another onecopyd");
      return Error(Errc::io, fmt::format("cannot lock {}", lock), __FILE__, __LINE__, errno);
    }
    if (::stat(lock.c_str(), &named) != 0 || !same_file(held, named)) continue;
    const std::string pid = fmt::format("{}\n", ::getpid());
    if (::ftruncate(fd.get(), 0) == 0) (void)::pwrite(fd.get(), pid.data(), pid.size(), 0);
    return fd;
  }
  return OC_ERROR(Errc::io, "the lock file {} kept changing while it was locked", lock);
}

// What is at @p path before binding: nothing (fine), a live server (refused), a socket nobody
// listens on (unlinked), or anything else (refused: never remove a file that is not a socket).
Result<void> clear_stale(const std::string& path, const sockaddr_un& addr) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return {};
    return Error(Errc::io, fmt::format("cannot stat {}", path), __FILE__, __LINE__, errno);
  }
  if (!S_ISSOCK(st.st_mode)) {
    return Error(Errc::io,
                 fmt::format("{} exists and is not a socket: remove it or choose another "
                             "daemon_socket",
                             path),
                 __FILE__, __LINE__, EEXIST);
  }
  UniqueFd probe(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!probe.valid()) return Error(Errc::io, "socket()", __FILE__, __LINE__, errno);
  const int rc = ::connect(probe.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
  // EAGAIN: a listener whose backlog is full; EPROTOTYPE: a stream or datagram socket with a
  // server of another kind behind it. Both are somebody's live socket.
  if (rc == 0 || errno == EAGAIN || errno == EPROTOTYPE) {
    ucred peer{};
    socklen_t len = sizeof peer;
    const bool known =
        rc == 0 && ::getsockopt(probe.get(), SOL_SOCKET, SO_PEERCRED, &peer, &len) == 0;
    return in_use(path, known ? peer.pid : 0, "a server");
  }
  if (errno != ECONNREFUSED && errno != ENOENT) {
    return Error(Errc::io, fmt::format("cannot tell whether a server listens on {}", path),
                 __FILE__, __LINE__, errno);
  }
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    return Error(Errc::io, fmt::format("cannot remove the stale socket {}", path), __FILE__,
                 __LINE__, errno);
  }
  log::get().info("replaced a stale socket file at {} (nobody was listening)", path);
  return {};
}

}  // namespace

ClaimedSocket::ClaimedSocket(ClaimedSocket&& o) noexcept
    : listen_(std::move(o.listen_)),
      lock_(std::move(o.lock_)),
      path_(std::move(o.path_)),
      dev_(o.dev_),
      ino_(o.ino_) {
  o.path_.clear();
}

ClaimedSocket& ClaimedSocket::operator=(ClaimedSocket&& o) noexcept {
  if (this != &o) {
    release();
    listen_ = std::move(o.listen_);
    lock_ = std::move(o.lock_);
    path_ = std::exchange(o.path_, {});
    dev_ = o.dev_;
    ino_ = o.ino_;
  }
  return *this;
}

ClaimedSocket::~ClaimedSocket() { release(); }

Result<ClaimedSocket> ClaimedSocket::bind_path(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  OC_EXPECT(!path.empty() && path.size() < sizeof addr.sun_path, invalid,
            "socket path '{}' must be non-empty and shorter than {} bytes", path,
            sizeof addr.sun_path);
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);

  ClaimedSocket out;
  OC_ASSIGN_OR_RETURN(out.lock_, take_lock(path));
  out.path_ = path;  // from here on the lock file is ours to remove
  OC_TRY(clear_stale(path, addr));
  out.listen_.reset(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!out.listen_.valid()) return Error(Errc::io, "socket()", __FILE__, __LINE__, errno);
  if (::bind(out.fd(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    return Error(Errc::io, fmt::format("bind {}", path), __FILE__, __LINE__, errno);
  }
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    out.dev_ = st.st_dev;
    out.ino_ = st.st_ino;
  }
  ::chmod(path.c_str(), 0660);
  if (::listen(out.fd(), SOMAXCONN) != 0) {
    return Error(Errc::io, "listen()", __FILE__, __LINE__, errno);
  }
  return out;
}

ClaimedSocket ClaimedSocket::adopt(int fd) {
  ClaimedSocket out;
  out.listen_.reset(fd);
  return out;
}

void ClaimedSocket::release() noexcept {
  if (!path_.empty()) {
    struct stat st {};
    if (ino_ != 0 && ::lstat(path_.c_str(), &st) == 0 && st.st_dev == dev_ && st.st_ino == ino_) {
      ::unlink(path_.c_str());
    }
    struct stat held {
    }, named{};
    const std::string lock = lock_path(path_);
    if (lock_.valid() && ::fstat(lock_.get(), &held) == 0 && ::stat(lock.c_str(), &named) == 0 &&
        same_file(held, named)) {
      ::unlink(lock.c_str());
    }
    path_.clear();
  }
  listen_.reset();
  lock_.reset();
}

}  // namespace oc::daemon
