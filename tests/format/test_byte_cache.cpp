// SPDX-License-Identifier: Apache-2.0
// The node's byte cache (format/byte_cache.hpp) over a counting fetch: what it keeps, what it
// evicts, what it shares between readers, what survives a restart, and what it does with cache
// files it cannot trust and with a disk that fails (a fault hook stands in for EIO and ENOSPC).
#include <atomic>
#include <catch2/catch.hpp>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "config/crc32c.hpp"
#include "format/byte_cache.hpp"

using namespace oc;
using format::Buffer;
using format::ByteCache;
using format::ByteRange;

namespace {

namespace fs = std::filesystem;

// The bytes of a made-up object: byte i of version v is (i * 7 + v) & 0xFF.
uint8_t byte_at(uint64_t i, uint8_t v) { return static_cast<uint8_t>((i * 7 + v) & 0xFF); }

// A store that counts the ranges it is asked for, optionally slow or failing.
struct Store {
  uint8_t version = 1;
  std::atomic<int> fetches{0};
  std::atomic<uint64_t> ranges{0}, bytes{0};
  std::chrono::milliseconds delay{0};
  bool fail = false;

  ByteCache::Fetch fetch() {
    return [this](std::span<const ByteRange> want) -> Result<std::vector<Buffer>> {
      ++fetches;
      if (delay.count() > 0) std::this_thread::sleep_for(delay);
      if (fail) return OC_ERROR(Errc::io, "the test's store failed");
      std::vector<Buffer> out;
      for (const auto& r : want) {
        Buffer b = Buffer::allocate_for_overwrite(r.length);
        for (uint64_t i = 0; i < r.length; ++i)
          b.mutable_data()[i] = byte_at(r.offset + i, version);
        out.push_back(std::move(b));
        ++ranges;
        bytes += r.length;
      }
      return out;
    };
  }
};

bool holds(const Buffer& b, const ByteRange& r, uint8_t version) {
  if (b.size() != r.length) return false;
  for (uint64_t i = 0; i < r.length; ++i) {
    if (b.data()[i] != byte_at(r.offset + i, version)) return false;
  }
  return true;
}

struct TempDir {
  fs::path path;
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "oc-byte-cache-XXXXXX").string();
    path = ::mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::vector<fs::path> files(std::string_view suffix = ".ocb") const {
    std::vector<fs::path> out;
    for (const auto& e : fs::directory_iterator(path)) {
      if (e.path().string().ends_with(suffix)) out.push_back(e.path());
    }
    return out;
  }
};

ByteCache::Options options(uint64_t memory_bytes, std::string dir = {}, uint64_t disk_bytes = 0) {
  ByteCache::Options o;
  o.memory_bytes = memory_bytes;
  o.dir = std::move(dir);
  o.disk_bytes = disk_bytes;
  return o;
}

const std::vector<ByteRange> kRanges = {{0, 1000}, {5000, 300}, {9000, 4096}};

}  // namespace

TEST_CASE("crc32c matches the Castagnoli check value") {
  const std::string s = "123456789";
  CHECK(crc32c({reinterpret_cast<const uint8_t*>(s.data()), s.size()}) == 0xE3069283u);
  // Continuing from a prefix gives the CRC of the whole.
  const auto* p = reinterpret_cast<const uint8_t*>(s.data());
  CHECK(crc32c({p + 4, 5}, crc32c({p, 4})) == 0xE3069283u);
  std::vector<uint8_t> zeros(32, 0);
  CHECK(crc32c(zeros) == 0x8A9136AAu);  // RFC 3720 B.4: 32 bytes of zeros
}

TEST_CASE("the memory tier serves a second read without the store") {
  ByteCache cache(options(1 << 20));
  Store store;
  for (int pass = 0; pass < 2; ++pass) {
    auto got = cache.read("s3://b/k", "etag1", kRanges, store.fetch());
    REQUIRE(got.ok());
    for (size_t i = 0; i < kRanges.size(); ++i) CHECK(holds((*got)[i], kRanges[i], 1));
  }
  CHECK(store.ranges == kRanges.size());
  const auto s = cache.stats();
  CHECK(s.misses == 3);
  CHECK(s.hits_memory == 3);
  CHECK(s.bytes_from_store == 1000 + 300 + 4096);
  CHECK(s.bytes_from_memory == 1000 + 300 + 4096);
  CHECK(s.memory_bytes == 1000 + 300 + 4096);
}

TEST_CASE("a new version of an object is read from the store, never served stale") {
  TempDir dir;
  ByteCache cache(options(1 << 20, dir.path.string(), 1 << 20));
  Store store;
  REQUIRE(cache.read("s3://b/k", "v1", kRanges, store.fetch()).ok());
  store.version = 2;
  auto got = cache.read("s3://b/k", "v2", kRanges, store.fetch());
  REQUIRE(got.ok());
  for (size_t i = 0; i < kRanges.size(); ++i) CHECK(holds((*got)[i], kRanges[i], 2));
  CHECK(store.ranges == 2 * kRanges.size());
}

TEST_CASE("eight readers of the same ranges at once cause one fetch") {
  ByteCache cache(options(1 << 20));
  Store store;
  store.delay = std::chrono::milliseconds(200);
  std::vector<std::thread> readers;
  std::atomic<int> equal{0};
  for (int t = 0; t < 8; ++t) {
    readers.emplace_back([&] {
      auto got = cache.read("s3://b/k", "e", kRanges, store.fetch());
      if (!got) return;
      bool ok = true;
      for (size_t i = 0; i < kRanges.size(); ++i) ok = ok && holds((*got)[i], kRanges[i], 1);
      if (ok) ++equal;
    });
  }
  for (auto& t : readers) t.join();
  CHECK(equal == 8);
  CHECK(store.fetches == 1);
  CHECK(store.ranges == kRanges.size());
}

TEST_CASE("a failed fetch fails its reader, and a waiter fetches for itself") {
  ByteCache cache(options(1 << 20));
  Store broken;
  broken.fail = true;
  broken.delay = std::chrono::milliseconds(200);
  Store good;
  std::thread first([&] { CHECK(!cache.read("s3://b/k", "e", kRanges, broken.fetch())); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  auto got = cache.read("s3://b/k", "e", kRanges, good.fetch());
  first.join();
  REQUIRE(got.ok());
  for (size_t i = 0; i < kRanges.size(); ++i) CHECK(holds((*got)[i], kRanges[i], 1));
  CHECK(good.fetches == 1);
}

TEST_CASE("a full memory tier evicts the least recently used, never what a reader holds") {
  ByteCache cache(options(3000));
  Store store;
  const std::vector<ByteRange> a = {{0, 1000}}, b = {{1000, 1000}}, c = {{2000, 1000}},
                               d = {{3000, 1000}};
  REQUIRE(cache.read("o", "e", a, store.fetch()).ok());
  // A reader that fetched holds its own bytes; one served by the cache holds the cache's: a
  // held by the test from here on is pinned.
  auto held = cache.read("o", "e", a, store.fetch());
  REQUIRE(held.ok());
  REQUIRE(cache.read("o", "e", b, store.fetch()).ok());
  REQUIRE(cache.read("o", "e", c, store.fetch()).ok());
  REQUIRE(cache.read("o", "e", d, store.fetch()).ok());  // evicts b, the oldest unpinned
  CHECK(cache.stats().evictions_memory == 1);
  CHECK(cache.stats().memory_bytes <= 3000);
  const int before = store.fetches;
  REQUIRE(cache.read("o", "e", a, store.fetch()).ok());
  CHECK(store.fetches == before);  // a stayed
  REQUIRE(cache.read("o", "e", b, store.fetch()).ok());
  CHECK(store.fetches == before + 1);  // b went
}

TEST_CASE("a cache whose every entry is pinned still serves reads, keeping nothing more") {
  ByteCache cache(options(1000));
  Store store;
  REQUIRE(cache.read("o", "e", std::vector<ByteRange>{{0, 1000}}, store.fetch()).ok());
  auto held = cache.read("o", "e", std::vector<ByteRange>{{0, 1000}}, store.fetch());  // pinned
  REQUIRE(held.ok());
  auto next = cache.read("o", "e", std::vector<ByteRange>{{1000, 500}}, store.fetch());
  REQUIRE(next.ok());
  CHECK(holds((*next)[0], {1000, 500}, 1));
  CHECK(cache.stats().memory_bytes == 1000);
}

TEST_CASE("the disk tier survives a restart and serves the next process") {
  TempDir dir;
  Store store;
  {
    ByteCache cache(options(0, dir.path.string(), 1 << 20));
    REQUIRE(cache.read("s3://b/k", "e", kRanges, store.fetch()).ok());
    cache.flush();
    CHECK(cache.stats().entries_disk == kRanges.size());
  }
  ByteCache again(options(0, dir.path.string(), 1 << 20));
  CHECK(again.stats().entries_disk == kRanges.size());
  auto got = again.read("s3://b/k", "e", kRanges, store.fetch());
  REQUIRE(got.ok());
  for (size_t i = 0; i < kRanges.size(); ++i) CHECK(holds((*got)[i], kRanges[i], 1));
  CHECK(store.ranges == kRanges.size());  // only the first process fetched
  CHECK(again.stats().hits_disk == kRanges.size());
}

TEST_CASE("a corrupt cache file is dropped on read and the range fetched again") {
  TempDir dir;
  ByteCache cache(options(0, dir.path.string(), 1 << 20));
  Store store;
  const std::vector<ByteRange> one = {{100, 2000}};
  REQUIRE(cache.read("o", "e", one, store.fetch()).ok());
  cache.flush();
  auto files = dir.files();
  REQUIRE(files.size() == 1);
  {
    std::fstream f(files[0], std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-10, std::ios::end);
    f.put('\x5A');  // one byte of the data: the data CRC no longer matches
  }
  auto got = cache.read("o", "e", one, store.fetch());
  REQUIRE(got.ok());
  CHECK(holds((*got)[0], one[0], 1));
  CHECK(store.ranges == 2);
  CHECK(cache.stats().disk_dropped == 1);
  CHECK(cache.stats().disk_on);
}

TEST_CASE("at start, truncated and foreign cache files are dropped and leftovers removed") {
  TempDir dir;
  Store store;
  {
    ByteCache cache(options(0, dir.path.string(), 1 << 20));
    REQUIRE(cache.read("o", "e", kRanges, store.fetch()).ok());
    cache.flush();
  }
  auto files = dir.files();
  REQUIRE(files.size() == 3);
  fs::resize_file(files[0], fs::file_size(files[0]) - 1);  // truncated
  { std::ofstream(files[1], std::ios::binary | std::ios::trunc) << "not a cache file at all"; }
  const fs::path leftover = files[2].string() + ".tmp.12345";  // an interrupted write
  std::ofstream(leftover) << "half";
  const fs::path theirs = dir.path / "README";  // not ours: left alone
  std::ofstream(theirs) << "keep me";

  ByteCache cache(options(0, dir.path.string(), 1 << 20));
  CHECK(cache.stats().entries_disk == 1);
  CHECK(cache.stats().disk_dropped == 2);
  CHECK(!fs::exists(leftover));
  CHECK(fs::exists(theirs));
  auto got = cache.read("o", "e", kRanges, store.fetch());
  REQUIRE(got.ok());
  for (size_t i = 0; i < kRanges.size(); ++i) CHECK(holds((*got)[i], kRanges[i], 1));
  CHECK(store.ranges == 3 + 2);
}

TEST_CASE("a disk that fails a write or a read turns the tier off, and reads go on") {
  const int err = GENERATE(ENOSPC, EIO);
  const std::string op = GENERATE(std::string("write"), std::string("read"));
  TempDir dir;
  std::atomic<bool> failing{false};
  ByteCache::Options o = options(0, dir.path.string(), 1 << 20);
  o.disk_fault = [&](std::string_view what) { return failing && what == op ? err : 0; };
  ByteCache cache(o);
  Store store;
  if (op == "read") {  // entries on disk first, then the disk fails under them
    REQUIRE(cache.read("o", "e", kRanges, store.fetch()).ok());
    cache.flush();
  }
  failing = true;
  for (int pass = 0; pass < 2; ++pass) {
    auto got = cache.read("o", "e", kRanges, store.fetch());
    REQUIRE(got.ok());
    for (size_t i = 0; i < kRanges.size(); ++i) CHECK(holds((*got)[i], kRanges[i], 1));
    cache.flush();
  }
  const auto s = cache.stats();
  CHECK(!s.disk_on);
  CHECK(s.disk_errors >= 1);
  CHECK(!cache.enabled());
  CHECK(dir.files(".tmp").empty() == true);
}

TEST_CASE("a full disk tier evicts its oldest files") {
  TempDir dir;
  // Each entry is 32 header bytes + its key + 1000 data bytes: three fit in 3200, four do not.
  ByteCache cache(options(0, dir.path.string(), 3200));
  Store store;
  for (uint64_t k = 0; k < 4; ++k) {
    REQUIRE(cache.read("o", "e", std::vector<ByteRange>{{k * 1000, 1000}}, store.fetch()));
    cache.flush();
  }
  const auto s = cache.stats();
  CHECK(s.evictions_disk == 1);
  CHECK(s.disk_bytes <= 3200);
  CHECK(dir.files().size() == 3);
}

TEST_CASE("clear drops both tiers and their files") {
  TempDir dir;
  ByteCache cache(options(1 << 20, dir.path.string(), 1 << 20));
  Store store;
  REQUIRE(cache.read("o", "e", kRanges, store.fetch()).ok());
  cache.flush();
  REQUIRE(dir.files().size() == 3);
  cache.clear();
  CHECK(dir.files().empty());
  CHECK(cache.stats().memory_bytes == 0);
  CHECK(cache.stats().entries_disk == 0);
  REQUIRE(cache.read("o", "e", kRanges, store.fetch()).ok());
  CHECK(store.ranges == 6);
}
