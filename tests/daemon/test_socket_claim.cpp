// SPDX-License-Identifier: Apache-2.0
// ClaimedSocket: one daemon per socket path. A live claim or a listener that holds no lock is
// refused and left alone, a stale socket file is replaced, a file that is not a socket is never
// removed, and a claim removes only the files it made.
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "daemon/socket_claim.hpp"

using oc::daemon::ClaimedSocket;

namespace {

struct TempDir {
  std::filesystem::path path;
  TempDir() {
    char tmpl[] = "/tmp/oc-claim-XXXXXX";
    REQUIRE(::mkdtemp(tmpl) != nullptr);
    path = tmpl;
  }
  ~TempDir() { std::filesystem::remove_all(path); }
};

bool is_socket(const std::string& p) {
  struct stat st {};
  return ::lstat(p.c_str(), &st) == 0 && S_ISSOCK(st.st_mode);
}

// A SOCK_SEQPACKET socket bound at @p path, listening or not, as another program leaves one.
oc::UniqueFd bound_socket(const std::string& path, bool listening) {
  oc::UniqueFd fd(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  REQUIRE(::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  if (listening) REQUIRE(::listen(fd.get(), 4) == 0);
  return fd;
}

bool connects(const std::string& path) {
  oc::UniqueFd fd(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  return ::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
}

}  // namespace

TEST_CASE("a claimed socket listens, refuses a second claim, and removes its files when released",
          "[daemon][socket-claim]") {
  TempDir dir;
  const std::string path = (dir.path / "d.sock").string();
  {
    auto first = ClaimedSocket::bind_path(path);
    REQUIRE(first.ok());
    CHECK(is_socket(path));
    CHECK(std::filesystem::exists(path + ".lock"));
    CHECK(connects(path));

    auto second = ClaimedSocket::bind_path(path);
    REQUIRE_FALSE(second.ok());
    CHECK(second.error().sys_errno() == EADDRINUSE);
    const std::string text = second.error().describe();
    CHECK_THAT(text, Catch::Contains("another onecopyd (pid " + std::to_string(::getpid()) + ")"));
    CHECK_THAT(text, Catch::Contains(path));
    // The refused claim took nothing away: the first still answers at the same file.
    CHECK(is_socket(path));
    CHECK(connects(path));
  }
  CHECK_FALSE(std::filesystem::exists(path));
  CHECK_FALSE(std::filesystem::exists(path + ".lock"));
  // Released, the path can be claimed again.
  CHECK(ClaimedSocket::bind_path(path).ok());
}

TEST_CASE("a listener that holds no lock is left alone", "[daemon][socket-claim]") {
  TempDir dir;
  const std::string path = (dir.path / "d.sock").string();
  auto other = bound_socket(path, /*listening=*/true);
  auto claim = ClaimedSocket::bind_path(path);
  REQUIRE_FALSE(claim.ok());
  CHECK(claim.error().sys_errno() == EADDRINUSE);
  CHECK_THAT(claim.error().describe(),
             Catch::Contains("a server (pid " + std::to_string(::getpid()) + ") already serves"));
  CHECK(is_socket(path));
  CHECK(connects(path));
  CHECK_FALSE(std::filesystem::exists(path + ".lock"));  // the failed claim cleaned up
}

TEST_CASE("a stale socket file is replaced", "[daemon][socket-claim]") {
  TempDir dir;
  const std::string path = (dir.path / "d.sock").string();
  { auto gone = bound_socket(path, /*listening=*/false); }  // a killed daemon's file
  REQUIRE(is_socket(path));
  REQUIRE_FALSE(connects(path));
  auto claim = ClaimedSocket::bind_path(path);
  REQUIRE(claim.ok());
  CHECK(connects(path));
}

TEST_CASE("a path that is not a socket is refused and kept", "[daemon][socket-claim]") {
  TempDir dir;
  const std::string path = (dir.path / "d.sock").string();
  std::ofstream(path) << "precious";
  auto claim = ClaimedSocket::bind_path(path);
  REQUIRE_FALSE(claim.ok());
  CHECK_THAT(claim.error().describe(), Catch::Contains("is not a socket"));
  std::ifstream in(path);
  std::string kept;
  in >> kept;
  CHECK(kept == "precious");

  // Nor does the lock file follow a link planted in a shared directory.
  const std::string other = (dir.path / "o.sock").string();
  const std::string target = (dir.path / "target").string();
  std::ofstream(target) << "precious";
  std::filesystem::create_symlink(target, other + ".lock");
  auto linked = ClaimedSocket::bind_path(other);
  REQUIRE_FALSE(linked.ok());
  CHECK_THAT(linked.error().describe(), Catch::Contains("lock file"));
  std::ifstream t(target);
  t >> kept;
  CHECK(kept == "precious");
}

TEST_CASE("a released claim leaves a socket file another daemon has since bound",
          "[daemon][socket-claim]") {
  TempDir dir;
  const std::string path = (dir.path / "d.sock").string();
  oc::UniqueFd replacement;
  {
    auto claim = ClaimedSocket::bind_path(path);
    REQUIRE(claim.ok());
    // Someone removed the file and bound their own (by hand, or an old daemon that unlinks).
    REQUIRE(::unlink(path.c_str()) == 0);
    replacement = bound_socket(path, /*listening=*/true);
  }
  CHECK(is_socket(path));
  CHECK(connects(path));
}

TEST_CASE("an adopted socket is never unlinked", "[daemon][socket-claim]") {
  TempDir dir;
  const std::string path = (dir.path / "d.sock").string();
  auto fd = bound_socket(path, /*listening=*/true);
  { auto adopted = ClaimedSocket::adopt(fd.release()); }
  CHECK(is_socket(path));
}
