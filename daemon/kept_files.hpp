// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief Local files onecopyd keeps open between requests, so that the next Open of the same
/// file, by any client, starts from its parsed footer and from what takes read of it
/// (format/take_cache.hpp) instead of from nothing.
///
/// A client passes onecopyd a descriptor it opened; a file is kept under the path the client
/// named and the identity `fstat` gives the descriptor (device, inode, size, modification and
/// change times), so it is found again only for the same path to the same unchanged file: a
/// client that can open the file for reading is handed what another client's reads left, of a
/// file it may read, under a name it gave itself. A file rewritten in place or replaced is
/// another key; its old entry ages out. A file changed in the last two seconds is not kept: a
/// change within the same tick of the file system's clock could leave every time as it was (git
/// calls such index entries racy), and two seconds covers the coarsest clocks (FAT, some NFS
/// servers). At most `daemon_kept_files` are kept, least recently opened out first, each
/// holding its descriptor; they are the first descriptors onecopyd gives back when it runs
/// short.
#pragma once

#include <sys/stat.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>

#include "format/reader.hpp"

namespace oc::daemon {

/// Which file a descriptor reads, and under what name a client opened it.
struct KeptFileKey {
  std::string path;
  dev_t device = 0;
  ino_t inode = 0;
  off_t size = 0;
  int64_t modified_ns = 0, changed_ns = 0;

  /// The key of a descriptor whose status is @p st (format::readable_fd_status: a regular file
  /// open for reading), opened by a client as @p path.
  [[nodiscard]] static KeptFileKey of(const struct stat& st, std::string path);
  friend auto operator<=>(const KeptFileKey&, const KeptFileKey&) = default;
};

/// Now on CLOCK_REALTIME, the clock file times are stamped from, in nanoseconds.
[[nodiscard]] int64_t wall_clock_ns() noexcept;

/// The kept files. Thread-safe: opens run on the io pool.
class KeptFiles {
 public:
  explicit KeptFiles(size_t capacity) : capacity_(capacity) {}

  /// The file kept under @p key (now the most recently used), or null.
  [[nodiscard]] std::shared_ptr<format::VortexFile> find(const KeptFileKey& key);
  /// Keeps @p file under @p key, dropping the least recently used past the capacity; not when
  /// the file changed less than two seconds before @p now_ns (CLOCK_REALTIME).
  void keep(const KeptFileKey& key, std::shared_ptr<format::VortexFile> file, int64_t now_ns);
  /// Drops every kept file (a file a session still reads stays open until it is done).
  void clear();
  [[nodiscard]] size_t size() const;
  /// How many `find` calls found a file.
  [[nodiscard]] uint64_t hits() const noexcept { return hits_.load(std::memory_order_relaxed); }

 private:
  const size_t capacity_;
  mutable std::mutex mu_;
  std::list<std::pair<KeptFileKey, std::shared_ptr<format::VortexFile>>> lru_;  // newest first
  std::map<KeptFileKey, decltype(lru_)::iterator> by_key_;
  std::atomic<uint64_t> hits_{0};
};

}  // namespace oc::daemon
