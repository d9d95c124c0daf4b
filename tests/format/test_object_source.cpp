// SPDX-License-Identifier: Apache-2.0
// The object source of libcls_onecopy.so (format/cls/object_source.hpp) over a fake `cls_read`:
// short reads where the object ends, malloc'ed copies (16-byte, not 64-byte, aligned), the size
// check against the request's claim, and reads refused off the opening thread, with a whole
// pushed-down scan through it equal to one over a memory source.
#include <catch2/catch.hpp>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "format/cls/object_source.hpp"
#include "format/pushdown.hpp"
#include "tests/format/seed_files.hpp"

using namespace oc;
using namespace oc::test;
using format::Buffer;
using format::ByteRange;

namespace {

// cls_read's contract over @p object: a malloc'ed copy of what lies in the range, short at the
// end; counts the calls in @p calls.
format::ObjectRead fake_cls_read(const std::vector<uint8_t>& object, int& calls) {
  return [&object, &calls](uint64_t offset, uint64_t length) -> Result<Buffer> {
    REQUIRE(length > 0);  // 0 would mean "to the end" to cls_read
    ++calls;
    const uint64_t n =
        offset >= object.size() ? 0 : std::min<uint64_t>(length, object.size() - offset);
    auto* p = static_cast<uint8_t*>(std::malloc(n ? n : 1));
    REQUIRE(p != nullptr);
    if (n) std::memcpy(p, object.data() + offset, n);
    std::shared_ptr<const void> owner(p, [](const void* q) { std::free(const_cast<void*>(q)); });
    return Buffer::wrap(std::move(owner), p, n);
  };
}

int errno_of(const Error& e) { return format::pushdown_errno(e); }

}  // namespace

TEST_CASE("an object source checks the claimed size with one read past it",
          "[pushdown][object_source]") {
  const std::vector<uint8_t> object{1, 2, 3, 4, 5, 6, 7};
  int calls = 0;
  auto exact = format::open_object_source(fake_cls_read(object, calls), 7, "obj");
  REQUIRE(exact.ok());
  CHECK((*exact)->size() == 7);
  CHECK(calls == 1);
  for (uint64_t claim : {uint64_t{0}, uint64_t{1}, uint64_t{6}, uint64_t{8}, uint64_t{1} << 40}) {
    INFO("claimed " << claim);
    auto s = format::open_object_source(fake_cls_read(object, calls), claim, "obj");
    REQUIRE(!s.ok());
    CHECK(errno_of(s.error()) == -ESTALE);
  }
  const std::vector<uint8_t> none;
  CHECK(format::open_object_source(fake_cls_read(none, calls), 0, "empty").ok());
  CHECK(errno_of(format::open_object_source(fake_cls_read(none, calls), 1, "empty").error()) ==
        -ESTALE);
  // The check read's own failure is the open's.
  auto failing = [](uint64_t, uint64_t) -> Result<Buffer> {
    return Error(Errc::io, "cls_read", __FILE__, __LINE__, EIO);
  };
  CHECK(format::open_object_source(failing, 7, "obj").error().sys_errno() == EIO);
}

TEST_CASE("an object source reads each range once, on its own thread only",
          "[pushdown][object_source]") {
  std::vector<uint8_t> object(1000);
  for (size_t i = 0; i < object.size(); ++i) object[i] = static_cast<uint8_t>(i * 7);
  int calls = 0;
  auto s = format::open_object_source(fake_cls_read(object, calls), object.size(), "obj");
  REQUIRE(s.ok());
  calls = 0;
  const std::vector<ByteRange> ranges{{10, 20}, {0, 0}, {990, 10}, {10, 20}};
  auto got = (*s)->read(ranges);
  REQUIRE(got.ok());
  CHECK(calls == 3);  // the empty range reads nothing
  for (size_t i = 0; i < ranges.size(); ++i) {
    REQUIRE((*got)[i].size() == ranges[i].length);
    CHECK(std::equal((*got)[i].data(), (*got)[i].data() + ranges[i].length,
                     object.begin() + static_cast<ptrdiff_t>(ranges[i].offset)));
  }
  CHECK((*s)->stats().bytes_read == 50);
  const ByteRange past{995, 6};
  CHECK((*s)->read(std::span(&past, 1)).error().code() == Errc::corrupt);

  Result<std::vector<Buffer>> elsewhere = Error(Errc::io, "not run");
  std::thread([&] { elsewhere = (*s)->read(std::span(&ranges[0], 1)); }).join();
  REQUIRE(!elsewhere.ok());
  CHECK(elsewhere.error().code() == Errc::unsupported);
}

TEST_CASE("a pushed-down scan over an object source equals one over memory",
          "[pushdown][object_source]") {
  for (const char* name : {"zoned.vortex", "mixed.vortex", "compact_strings.vortex"}) {
    INFO(name);
    const auto file = read_seed(name);
    REQUIRE(!file.empty());
    format::PushdownRequest r;
    r.file_size = file.size();
    int calls = 0;
    auto object = format::open_object_source(fake_cls_read(file, calls), file.size(), name);
    REQUIRE(object.ok());
    auto got = format::run_pushdown_scan(**object, r, 64 << 20);
    INFO((got.ok() ? std::string("ok") : got.error().to_string()));
    REQUIRE(got.ok());
    auto memory = format::memory_source(Buffer::copy_of(file));
    auto want = format::run_pushdown_scan(*memory, r, 64 << 20);
    REQUIRE(want.ok());
    CHECK(*got == *want);
    CHECK(calls > 1);
  }
}
