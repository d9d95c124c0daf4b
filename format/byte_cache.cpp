// SPDX-License-Identifier: Apache-2.0
#include "format/byte_cache.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>

#include "config/crc32c.hpp"
#include "config/defaults.hpp"
#include "config/fd.hpp"
#include "config/log.hpp"

namespace oc::format {
namespace {

constexpr char kMagic[8] = {'O', 'C', 'B', 'C', 'A', 'C', 'H', 'E'};
constexpr uint32_t kLayoutVersion = 1;
constexpr size_t kHeaderBytes = 32;
constexpr std::string_view kSuffix = ".ocb";
// Disk writes waiting for the writer at most: past it, fetched bytes are kept in memory only.
constexpr uint64_t kMaxQueuedWriteBytes = uint64_t{256} << 20;

std::string key_of(const std::string& object, const std::string& version, const ByteRange& r) {
  std::string key = object;
  key.push_back('\0');
  key += version;
  key.push_back('\0');
  key += fmt::format("{}:{}", r.offset, r.length);
  return key;
}

uint64_t fnv1a(std::string_view s, uint64_t h) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001B3ULL;
  }
  return h;
}

void put_u32(uint8_t* p, uint32_t v) { std::memcpy(p, &v, 4); }
void put_u64(uint8_t* p, uint64_t v) { std::memcpy(p, &v, 8); }
uint32_t get_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
uint64_t get_u64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

// The header of an entry of @p key_len key bytes and @p data, its own CRC not yet set.
void fill_header(uint8_t* h, uint32_t key_len, std::span<const uint8_t> data) {
  std::memcpy(h, kMagic, 8);
  put_u32(h + 8, kLayoutVersion);
  put_u32(h + 12, key_len);
  put_u64(h + 16, data.size());
  put_u32(h + 24, crc32c(data));
}

uint32_t header_crc(const uint8_t* h, std::string_view key) {
  return crc32c({reinterpret_cast<const uint8_t*>(key.data()), key.size()}, crc32c({h, 28}));
}

// @return the key of a file whose header and key check, else nullopt.
std::optional<std::string> read_key(int fd, uint64_t file_size) {
  uint8_t h[kHeaderBytes];
  if (file_size < kHeaderBytes || ::pread(fd, h, kHeaderBytes, 0) != kHeaderBytes) {
    return std::nullopt;
  }
  const uint32_t key_len = get_u32(h + 12);
  const uint64_t data_len = get_u64(h + 16);
  if (std::memcmp(h, kMagic, 8) != 0 || get_u32(h + 8) != kLayoutVersion || key_len > (1u << 20) ||
      data_len != file_size - std::min<uint64_t>(file_size, kHeaderBytes + key_len) ||
      file_size < kHeaderBytes + key_len) {
    return std::nullopt;
  }
  std::string key(key_len, '\0');
  if (::pread(fd, key.data(), key_len, kHeaderBytes) != static_cast<ssize_t>(key_len)) {
    return std::nullopt;
  }
  if (header_crc(h, key) != get_u32(h + 28)) return std::nullopt;
  return key;
}

bool pread_all(int fd, uint8_t* dst, uint64_t n, uint64_t at) {
  while (n > 0) {
    const ssize_t got = ::pread(fd, dst, n, static_cast<off_t>(at));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    dst += got;
    n -= static_cast<uint64_t>(got);
    at += static_cast<uint64_t>(got);
  }
  return true;
}

bool write_all(int fd, const uint8_t* src, uint64_t n) {
  while (n > 0) {
    const ssize_t put = ::write(fd, src, n);
    if (put < 0 && errno == EINTR) continue;
    if (put <= 0) return false;
    src += put;
    n -= static_cast<uint64_t>(put);
  }
  return true;
}

// A copy of @p b on the heap, whatever arena the calling thread decodes into (onecopyd's decode
// jobs allocate in their client's slabs): the cache's bytes belong to no client.
Buffer heap_copy(const Buffer& b) {
  ArenaScope heap(nullptr);
  return Buffer::copy_of(b.span());
}

}  // namespace

ByteCache::ByteCache(Options options) : options_(std::move(options)) {
  counts_.memory_limit = options_.memory_bytes;
  counts_.disk_limit = options_.disk_bytes;
  if (!options_.dir.empty() && options_.disk_bytes > 0) {
    index_disk();
    if (disk_on_) {
      try {
        writer_ = std::thread([this] {
          try {
            write_loop();
          } catch (...) {  // nothing leaves the thread: the tier goes off, waiters are freed
            disk_failed("the disk writer", ENOMEM);
            std::lock_guard lock(write_mu_);
            writes_.clear();
            write_queue_bytes_ = 0;
            writing_ = false;
            written_.notify_all();
          }
        });
      } catch (const std::system_error& e) {  // no thread to be had: no disk tier, no exception
        log::get().error("byte cache: no thread for disk writes ({}): the disk tier is off",
                         e.what());
        disk_on_ = false;
      }
    }
  }
}

ByteCache::~ByteCache() {
  {
    std::lock_guard lock(write_mu_);
    stopping_ = true;
  }
  write_cv_.notify_all();
  if (writer_.joinable()) writer_.join();
}

ByteCache& ByteCache::process() {
  // One cache per process: a forked child (a DataLoader worker) makes its own, since a lock or
  // the writer thread of its parent's may be in any state there; the parent's is left as it is.
  static std::mutex made_mu;
  static ByteCache* cache = nullptr;
  static pid_t owner = 0;
  std::lock_guard lock(made_mu);
  if (cache == nullptr || owner != ::getpid()) {
    const Defaults& d = defaults();
    Options o;
    o.memory_bytes = d.cache_memory_bytes;
    o.dir = d.cache_dir;
    if (o.dir.empty()) {
      // systemd's CacheDirectory= sets it (several are separated by ':': the first is ours).
      if (const char* dirs = std::getenv("CACHE_DIRECTORY"); dirs && *dirs) {
        o.dir = std::string(dirs).substr(0, std::string_view(dirs).find(':'));
      }
    }
    o.disk_bytes = d.cache_disk_bytes;
    cache = new ByteCache(std::move(o));  // never freed: reads may run until the process ends
    owner = ::getpid();
  }
  return *cache;
}

std::string ByteCache::file_of(const std::string& key) const {
  return fmt::format("{}/{:016x}{:016x}{}", options_.dir, fnv1a(key, 0xCBF29CE484222325ULL),
                     fnv1a(key, 0x84222325CBF29CE4ULL), kSuffix);
}

void ByteCache::index_disk() {
  namespace fs = std::filesystem;
  std::error_code ec;
  // Private to this user when made here: its entries are served as the store's bytes.
  if (fs::create_directories(options_.dir, ec)) {
    fs::permissions(options_.dir, fs::perms::owner_all, fs::perm_options::replace, ec);
  }
  if (!fs::is_directory(options_.dir, ec)) {
    log::get().warn("byte cache: {} is not a directory we can use: the disk tier is off",
                    options_.dir);
    return;
  }
  struct Found {
    std::string key, file;
    uint64_t size;
    fs::file_time_type when;
  };
  std::vector<Found> found;
  for (fs::directory_iterator it(options_.dir, ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const bool ours = name.size() == 32 + kSuffix.size() && name.ends_with(kSuffix);
    if (name.find(std::string(kSuffix) + ".tmp.") != std::string::npos) {
      fs::remove(it->path(), ec);  // a write a crash interrupted
      continue;
    }
    if (!ours) continue;  // not a cache file: never ours to remove
    const std::string file = it->path().string();
    UniqueFd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    struct stat st {};
    std::optional<std::string> key;
    // Only this user's files: one another user could write would be served as the store's
    // bytes (a shared cache_dir).
    if (fd.valid() && ::fstat(fd.get(), &st) == 0 && S_ISREG(st.st_mode) &&
        st.st_uid == ::geteuid()) {
      key = read_key(fd.get(), static_cast<uint64_t>(st.st_size));
    }
    if (!key || file != file_of(*key)) {
      ::unlink(file.c_str());
      ++counts_.disk_dropped;
      continue;
    }
    found.push_back(
        {std::move(*key), file, static_cast<uint64_t>(st.st_size), it->last_write_time(ec)});
  }
  std::sort(found.begin(), found.end(),
            [](const Found& a, const Found& b) { return a.when > b.when; });
  for (auto& f : found) {
    disk_lru_.push_back(f.key);
    disk_bytes_ += f.size;
    disk_[f.key] = DiskEntry{std::move(f.file), f.size, std::prev(disk_lru_.end())};
  }
  disk_on_ = true;
  evict_disk(0);
  log::get().info("byte cache: {} entries ({} bytes) on disk in {}, {} dropped", disk_.size(),
                  disk_bytes_, options_.dir, counts_.disk_dropped);
}

void ByteCache::keep_in_memory(const std::string& key, const Buffer& bytes) {
  if (bytes.size() > options_.memory_bytes || memory_.count(key)) return;
  evict_memory(bytes.size());
  if (memory_bytes_ + bytes.size() > options_.memory_bytes) return;  // all pinned: not kept
  memory_lru_.push_front(key);
  memory_[key] = Entry{bytes, memory_lru_.begin()};
  memory_bytes_ += bytes.size();
}

void ByteCache::evict_memory(uint64_t need) {
  for (auto it = memory_lru_.end();
       memory_bytes_ + need > options_.memory_bytes && it != memory_lru_.begin();) {
    --it;
    auto entry = memory_.find(*it);
    // Pinned: a reader still holds these bytes (the cache's reference is the other one).
    if (entry->second.bytes.owner().use_count() > 1) continue;
    memory_bytes_ -= entry->second.bytes.size();
    memory_.erase(entry);
    it = memory_lru_.erase(it);
    ++counts_.evictions_memory;
  }
}

void ByteCache::evict_disk(uint64_t need) {
  while (!disk_lru_.empty() && disk_bytes_ + need > options_.disk_bytes) {
    auto entry = disk_.find(disk_lru_.back());
    ::unlink(entry->second.file.c_str());  // a reader with it open keeps reading it
    disk_bytes_ -= entry->second.size;
    disk_.erase(entry);
    disk_lru_.pop_back();
    ++counts_.evictions_disk;
  }
}

void ByteCache::disk_failed(const std::string& what, int err) {
  std::lock_guard lock(mu_);
  ++counts_.disk_errors;
  if (!disk_on_) return;
  disk_on_ = false;
  log::get().error(
      "byte cache: {} in {} failed ({}): the disk tier is off until onecopy starts "
      "again; reads go on from memory and the store",
      what, options_.dir, std::strerror(err));
}

std::optional<Buffer> ByteCache::read_disk(const std::string& key, const std::string& file) {
  auto drop = [&](bool io_error, int err) -> std::optional<Buffer> {
    {
      std::lock_guard lock(mu_);
      if (auto it = disk_.find(key); it != disk_.end()) {
        disk_bytes_ -= it->second.size;
        disk_lru_.erase(it->second.lru);
        disk_.erase(it);
      }
      if (!io_error) ++counts_.disk_dropped;
    }
    if (io_error) {
      disk_failed("reading a cache file", err);
    } else {
      ::unlink(file.c_str());
    }
    return std::nullopt;
  };
  if (options_.disk_fault) {
    if (const int err = options_.disk_fault("read"); err != 0) return drop(true, err);
  }
  UniqueFd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  struct stat st {};
  if (!fd.valid() || ::fstat(fd.get(), &st) != 0) return drop(errno == EIO, errno);
  if (!S_ISREG(st.st_mode) || st.st_uid != ::geteuid()) return drop(false, 0);  // replaced
  const auto size = static_cast<uint64_t>(st.st_size);
  if (size < kHeaderBytes + key.size()) return drop(false, 0);
  Buffer all = [&] {
    ArenaScope heap(nullptr);
    return Buffer::allocate_for_overwrite(size);
  }();
  if (!pread_all(fd.get(), all.mutable_data(), size, 0)) return drop(errno == EIO, errno);
  const uint8_t* h = all.data();
  const uint64_t data_len = get_u64(h + 16);
  const std::string_view stored(reinterpret_cast<const char*>(h + kHeaderBytes),
                                std::min<uint64_t>(get_u32(h + 12), size - kHeaderBytes));
  if (std::memcmp(h, kMagic, 8) != 0 || get_u32(h + 8) != kLayoutVersion || stored != key ||
      kHeaderBytes + key.size() + data_len != size || header_crc(h, key) != get_u32(h + 28)) {
    return drop(false, 0);
  }
  Buffer data = all.slice(kHeaderBytes + key.size(), data_len);
  if (crc32c(data.span()) != get_u32(h + 24)) return drop(false, 0);
  return data;
}

void ByteCache::write_loop() {
  while (true) {
    Write w;
    {
      std::unique_lock lock(write_mu_);
      write_cv_.wait(lock, [&] { return stopping_ || !writes_.empty(); });
      if (writes_.empty()) return;  // stopping, nothing left
      w = std::move(writes_.front());
      writes_.erase(writes_.begin());
      writing_ = true;
    }
    const std::string file = file_of(w.key);
    const std::string tmp = fmt::format("{}.tmp.{}", file, ::getpid());
    uint8_t h[kHeaderBytes];
    fill_header(h, static_cast<uint32_t>(w.key.size()), w.bytes.span());
    put_u32(h + 28, header_crc(h, w.key));
    bool ok = false;
    int err = options_.disk_fault ? options_.disk_fault("write") : 0;
    if (err == 0) {
      UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600));
      ok = fd.valid() && write_all(fd.get(), h, kHeaderBytes) &&
           write_all(fd.get(), reinterpret_cast<const uint8_t*>(w.key.data()), w.key.size()) &&
           write_all(fd.get(), w.bytes.data(), w.bytes.size());
      err = errno;
      if (ok && ::close(fd.release()) != 0) {
        ok = false;
        err = errno;
      }
    }
    if (ok && ::rename(tmp.c_str(), file.c_str()) != 0) {
      ok = false;
      err = errno;
    }
    if (!ok) {
      ::unlink(tmp.c_str());
      disk_failed("writing a cache file", err);
    } else {
      std::lock_guard lock(mu_);
      const uint64_t size = kHeaderBytes + w.key.size() + w.bytes.size();
      if (!disk_on_ || disk_.count(w.key)) {
        if (!disk_on_) ::unlink(file.c_str());
      } else {
        evict_disk(size);
        disk_lru_.push_front(w.key);
        disk_[w.key] = DiskEntry{file, size, disk_lru_.begin()};
        disk_bytes_ += size;
      }
    }
    {
      std::lock_guard lock(write_mu_);
      write_queue_bytes_ -= w.bytes.size();
      writing_ = false;
    }
    written_.notify_all();
  }
}

Result<std::vector<Buffer>> ByteCache::read(const std::string& object, const std::string& version,
                                            std::span<const ByteRange> ranges, const Fetch& fetch) {
  std::vector<Buffer> out(ranges.size());
  std::vector<std::string> keys(ranges.size());
  std::vector<size_t> mine;                                        // fetched here
  std::vector<std::pair<size_t, std::string>> from_disk;           // read here, from a file
  std::vector<std::pair<size_t, std::shared_ptr<Flight>>> theirs;  // another reader fetches
  std::vector<std::shared_ptr<Flight>> flights(ranges.size());
  {
    std::lock_guard lock(mu_);
    for (size_t i = 0; i < ranges.size(); ++i) {
      keys[i] = key_of(object, version, ranges[i]);
      if (auto hit = memory_.find(keys[i]); hit != memory_.end()) {
        out[i] = hit->second.bytes;
        memory_lru_.splice(memory_lru_.begin(), memory_lru_, hit->second.lru);
        ++counts_.hits_memory;
        counts_.bytes_from_memory += ranges[i].length;
        continue;
      }
      if (auto f = flights_.find(keys[i]); f != flights_.end()) {
        theirs.emplace_back(i, f->second);
        ++counts_.waits;
        continue;
      }
      flights[i] = std::make_shared<Flight>();
      flights_[keys[i]] = flights[i];
      if (auto d = disk_.find(keys[i]); d != disk_.end() && disk_on_) {
        disk_lru_.splice(disk_lru_.begin(), disk_lru_, d->second.lru);
        from_disk.emplace_back(i, d->second.file);
      } else {
        mine.push_back(i);
      }
    }
  }
  // Every flight of this call lands, whatever happens: a waiter never waits forever.
  auto land = [&](size_t i, const Buffer* bytes) {
    std::lock_guard lock(mu_);
    if (!flights[i] || flights[i]->done) return;
    flights[i]->done = true;
    flights[i]->ok = bytes != nullptr;
    if (bytes) flights[i]->bytes = *bytes;
    flights_.erase(keys[i]);
    landed_.notify_all();
  };
  struct LandAll {
    std::function<void()> f;
    ~LandAll() { f(); }
  } land_all{[&] {
    for (size_t i = 0; i < ranges.size(); ++i) land(i, nullptr);
  }};

  for (auto& [i, file] : from_disk) {
    if (auto bytes = read_disk(keys[i], file)) {
      out[i] = *bytes;
      {
        std::lock_guard lock(mu_);
        ++counts_.hits_disk;
        counts_.bytes_from_disk += ranges[i].length;
        keep_in_memory(keys[i], out[i]);
      }
      land(i, &out[i]);
    } else {
      mine.push_back(i);
    }
  }
  auto fetch_these = [&](const std::vector<size_t>& which) -> Result<void> {
    if (which.empty()) return {};
    std::vector<ByteRange> want;
    want.reserve(which.size());
    for (size_t i : which) want.push_back(ranges[i]);
    OC_ASSIGN_OR_RETURN(std::vector<Buffer> got, fetch(want));
    OC_EXPECT(got.size() == want.size(), io, "{}: {} ranges fetched for {}", object, got.size(),
              want.size());
    for (size_t k = 0; k < which.size(); ++k) {
      const size_t i = which[k];
      out[i] = std::move(got[k]);
      // A copy of its own for the cache (the reader's bytes are a lease of the pinned pool),
      // made only where a tier may keep it.
      const bool keepable = ranges[i].length <= options_.memory_bytes || disk_on_now();
      const Buffer kept = keepable ? heap_copy(out[i]) : Buffer();
      bool to_disk = false;
      {
        std::lock_guard lock(mu_);
        ++counts_.misses;
        counts_.bytes_from_store += ranges[i].length;
        if (keepable) keep_in_memory(keys[i], kept);
        to_disk = keepable && disk_on_;
      }
      if (to_disk) {
        std::lock_guard lock(write_mu_);
        if (write_queue_bytes_ + kept.size() <= kMaxQueuedWriteBytes) {
          write_queue_bytes_ += kept.size();
          writes_.push_back({keys[i], kept});
          write_cv_.notify_one();
        }
      }
      land(i, keepable ? &kept : &out[i]);
    }
    return {};
  };
  OC_TRY(fetch_these(mine));
  std::vector<size_t> orphans;  // their fetch failed: fetched here
  for (auto& waited : theirs) {
    const size_t i = waited.first;
    const std::shared_ptr<Flight>& flight = waited.second;  // a lambda may not capture a binding
    std::unique_lock lock(mu_);
    landed_.wait(lock, [&] { return flight->done; });
    if (flight->ok) {
      out[i] = flight->bytes;
      counts_.bytes_from_memory += ranges[i].length;
    } else {
      orphans.push_back(i);
    }
  }
  OC_TRY(fetch_these(orphans));
  return out;
}

bool ByteCache::disk_on_now() const {
  std::lock_guard lock(mu_);
  return disk_on_;
}

bool ByteCache::enabled() const {
  std::lock_guard lock(mu_);
  return options_.memory_bytes > 0 || disk_on_;
}

ByteCacheStats ByteCache::stats() const {
  std::lock_guard lock(mu_);
  ByteCacheStats s = counts_;
  s.memory_bytes = memory_bytes_;
  s.disk_bytes = disk_bytes_;
  s.entries_memory = memory_.size();
  s.entries_disk = disk_.size();
  s.disk_on = disk_on_;
  return s;
}

void ByteCache::flush() {
  std::unique_lock lock(write_mu_);
  written_.wait(lock, [&] { return (writes_.empty() && !writing_) || !writer_.joinable(); });
}

void ByteCache::clear() {
  flush();
  std::lock_guard lock(mu_);
  memory_.clear();
  memory_lru_.clear();
  memory_bytes_ = 0;
  for (const auto& [key, entry] : disk_) ::unlink(entry.file.c_str());
  disk_.clear();
  disk_lru_.clear();
  disk_bytes_ = 0;
  const bool on = disk_on_;
  counts_ = ByteCacheStats{};
  counts_.memory_limit = options_.memory_bytes;
  counts_.disk_limit = options_.disk_bytes;
  disk_on_ = on;
}

}  // namespace oc::format
