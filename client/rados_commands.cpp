// SPDX-License-Identifier: Apache-2.0
#include "client/rados_commands.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <iostream>

#include "config/fd.hpp"
#include "net/rados.hpp"

namespace oc::client {
namespace {

constexpr int kExitError = 1;
constexpr int kExitUsage = 2;
// Copies move this much per RADOS operation.
constexpr uint64_t kCopyChunk = uint64_t{32} << 20;

int fail(const Error& e) {
  std::cerr << "onecopy: " << e.to_string() << "\n";
  return kExitError;
}

Error sys_error(int e, std::string what) {
  return Error(e == ENOENT                   ? Errc::not_found
               : (e == EACCES || e == EPERM) ? Errc::denied
                                             : Errc::io,
               fmt::format("{}: {}", what, std::strerror(e)), __FILE__, __LINE__, e);
}

Result<uint64_t> download(const net::RadosUri& from, const std::string& path) {
  OC_ASSIGN_OR_RETURN(auto pool, net::rados_pool(from.pool));
  OC_ASSIGN_OR_RETURN(uint64_t size, pool->stat(from.object));
  // Written beside the destination and renamed over it: a failed copy leaves no half file.
  const std::string tmp = path + ".onecopy-partial";
  UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!fd.valid()) return sys_error(errno, "creating " + tmp);
  std::vector<uint8_t> chunk(static_cast<size_t>(std::min(size, kCopyChunk)));
  Result<void> r{};
  for (uint64_t off = 0; off < size && r.ok(); off += kCopyChunk) {
    const uint64_t n = std::min(kCopyChunk, size - off);
    const format::ByteRange range{off, n};
    uint8_t* dst = chunk.data();
    r = pool->read(from.object, std::span(&range, 1), std::span(&dst, 1));
    for (uint64_t w = 0; r.ok() && w < n;) {
      const ssize_t k = ::write(fd.get(), chunk.data() + w, static_cast<size_t>(n - w));
      if (k < 0 && errno == EINTR) continue;
      if (k <= 0)
        r = sys_error(k < 0 ? errno : EIO, "writing " + tmp);
      else
        w += static_cast<uint64_t>(k);
    }
  }
  if (r.ok() && ::fsync(fd.get()) != 0) r = sys_error(errno, "syncing " + tmp);
  if (r.ok() && ::rename(tmp.c_str(), path.c_str()) != 0)
    r = sys_error(errno, "renaming to " + path);
  if (!r.ok()) {
    ::unlink(tmp.c_str());
    return std::move(r).error();
  }
  return size;
}

Result<uint64_t> upload(const std::string& path, net::RadosUri to) {
  if (to.object.empty() || to.object.ends_with('/'))
    to.object += path.substr(path.find_last_of('/') + 1);
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (!fd.valid()) return sys_error(errno, "opening " + path);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return sys_error(errno, "stat " + path);
  OC_EXPECT(S_ISREG(st.st_mode), invalid, "{} is not a regular file", path);
  OC_ASSIGN_OR_RETURN(auto pool, net::rados_pool(to.pool));
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  OC_TRY(pool->write(to.object, size, [&](std::span<uint8_t> into) -> Result<size_t> {
    while (true) {
      const ssize_t k = ::read(fd.get(), into.data(), into.size());
      if (k < 0 && errno == EINTR) continue;
      if (k < 0) return sys_error(errno, "reading " + path);
      return static_cast<size_t>(k);
    }
  }));
  return size;
}

}  // namespace

int run_rados_ls(const std::string& uri) {
  auto parsed = net::parse_rados_uri(uri, /*allow_empty_object=*/true);
  if (!parsed.ok()) return fail(parsed.error());
  auto pool = net::rados_pool(parsed->pool);
  if (!pool.ok()) return fail(pool.error());
  auto names = net::names_under(**pool, parsed->object, UINT64_MAX);
  if (!names.ok()) return fail(names.error());
  for (const auto& n : *names) {
    auto size = (*pool)->stat(n);
    if (!size.ok()) {
      if (size.error().code() == Errc::not_found) continue;  // removed since the listing
      return fail(size.error());
    }
    std::cout << *size << " " << n << "\n";
  }
  std::cout.flush();
  return std::cout.good() ? 0 : kExitError;
}

int run_rados_cp(const std::string& src, const std::string& dst) {
  const bool down = src.starts_with("rados://");
  if (down == dst.starts_with("rados://")) {
    std::cerr << "onecopy: cp copies between a local file and rados://pool/object\n";
    return kExitUsage;
  }
  auto uri = net::parse_rados_uri(down ? src : dst, /*allow_empty_object=*/!down);
  if (!uri.ok()) return fail(uri.error());
  const auto t0 = std::chrono::steady_clock::now();
  auto bytes = down ? download(*uri, dst) : upload(src, *uri);
  if (!bytes.ok()) return fail(bytes.error());
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::cerr << fmt::format("{} -> {}: {} bytes, {:.1f} MB/s\n", src, dst, *bytes,
                           *bytes / 1e6 / std::max(s, 1e-9));
  return 0;
}

}  // namespace oc::client
