// SPDX-License-Identifier: Apache-2.0
// The files onecopyd keeps open between requests (daemon/kept_files.hpp): found again only under
// the same path and identity, the least recently opened dropped past the capacity, and never a
// file changed in the last two seconds.
#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "config/fd.hpp"
#include "daemon/kept_files.hpp"
#include "format/segment_source.hpp"
#include "tests/format/seed_files.hpp"

namespace oc::daemon {
namespace {

constexpr int64_t kSecond = 1'000'000'000;

std::shared_ptr<format::VortexFile> open_seed() {
  auto f = format::VortexFile::open_path(test::seed_path("zoned.vortex"));
  REQUIRE(f.ok());
  return *f;
}

KeptFileKey key_of(const std::string& path) {
  UniqueFd fd(::open(test::seed_path("zoned.vortex").c_str(), O_RDONLY | O_CLOEXEC));
  REQUIRE(fd.valid());
  auto st = format::readable_fd_status(fd.get(), path);
  REQUIRE(st.ok());
  return KeptFileKey::of(*st, path);
}

}  // namespace

TEST_CASE("a kept file is found under its path and identity only", "[daemon]") {
  KeptFiles kept(2);
  const KeptFileKey key = key_of("/data/zoned.vortex");
  const int64_t later = std::max(key.modified_ns, key.changed_ns) + 3 * kSecond;
  const auto file = open_seed();
  kept.keep(key, file, later);
  CHECK(kept.find(key) == file);
  CHECK(kept.size() == 1);
  CHECK(kept.hits() == 1);
  KeptFileKey other_name = key;
  other_name.path = "/elsewhere/zoned.vortex";  // the same file under a name another client gave
  CHECK(kept.find(other_name) == nullptr);
  KeptFileKey grown = key, replaced = key, rewritten = key, touched = key;
  grown.size += 1;
  replaced.inode += 1;
  rewritten.modified_ns += 1;
  touched.changed_ns += 1;
  for (const KeptFileKey& changed : {grown, replaced, rewritten, touched}) {
    CHECK(kept.find(changed) == nullptr);
  }
  kept.clear();
  CHECK(kept.size() == 0);
  CHECK(kept.find(key) == nullptr);
}

TEST_CASE("kept files past the capacity go least recently opened first; 0 keeps none", "[daemon]") {
  KeptFiles kept(2);
  KeptFileKey a = key_of("/a"), b = key_of("/b"), c = key_of("/c");
  const int64_t later = std::max(a.modified_ns, a.changed_ns) + 3 * kSecond;
  kept.keep(a, open_seed(), later);
  kept.keep(b, open_seed(), later);
  REQUIRE(kept.find(a) != nullptr);  // a is now the most recently opened
  kept.keep(c, open_seed(), later);
  CHECK(kept.size() == 2);
  CHECK(kept.find(b) == nullptr);
  CHECK(kept.find(a) != nullptr);
  CHECK(kept.find(c) != nullptr);
  const auto later_open = open_seed();  // two opens of one file raced: the later is kept
  kept.keep(a, later_open, later);
  CHECK(kept.size() == 2);
  CHECK(kept.find(a) == later_open);
  KeptFiles none(0);
  none.keep(a, open_seed(), later);
  CHECK(none.size() == 0);
}

TEST_CASE("a file changed in the last two seconds is not kept", "[daemon]") {
  KeptFiles kept(4);
  KeptFileKey key = key_of("/racy");
  const int64_t changed = std::max(key.modified_ns, key.changed_ns);
  kept.keep(key, open_seed(), changed + kSecond);
  CHECK(kept.size() == 0);
  kept.keep(key, open_seed(), changed + 2 * kSecond);
  CHECK(kept.size() == 1);
  CHECK(wall_clock_ns() > changed);  // the clock file times come from
}

}  // namespace oc::daemon
