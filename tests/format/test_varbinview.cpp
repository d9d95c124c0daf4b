// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>

#include "tests/format/fixtures.hpp"
#include "tests/format/strings_golden.hpp"

using namespace oc;
using namespace oc::test;

namespace {

// A 16-byte view holding @p s inline (s.size() <= 12).
std::string inline_view(const std::string& s) {
  std::string v(16, '\0');
  const auto size = static_cast<uint32_t>(s.size());
  std::memcpy(v.data(), &size, 4);
  std::memcpy(v.data() + 4, s.data(), s.size());
  return v;
}

// A 16-byte view of @p size bytes at @p offset of data buffer @p index.
std::string ref_view(uint32_t size, uint32_t index, uint32_t offset) {
  std::string v(16, '\0');
  std::memcpy(v.data(), &size, 4);
  std::memcpy(v.data() + 8, &index, 4);
  std::memcpy(v.data() + 12, &offset, 4);
  return v;
}

}  // namespace

TEST_CASE("vortex.varbinview golden segments decode like the oracle", "[format][varbinview]") {
  strings_golden::check("varbinview_utf8", DType::make_utf8(true));
  strings_golden::check("varbinview_two_buffers", DType::make_utf8(true));
  strings_golden::check("varbinview_binary", DType::make_binary(false));
}

TEST_CASE("vortex.varbinview reads inline and referenced views", "[format][varbinview]") {
  const std::string data = "..a value longer than twelve bytes";
  auto n = node("vortex.varbinview", {},
                {bytes_of(data),
                 bytes_of(inline_view("") + inline_view("twelve bytes") + ref_view(32, 0, 2))});
  auto c = decode(n, DType::make_binary(false), 3);
  REQUIRE(c.ok());
  CHECK(strings_of(**c) == std::vector<std::string>{"", "twelve bytes", data.substr(2)});
  CHECK((*c)->null_count == 0);
}

TEST_CASE("vortex.varbinview handles empty and all-null arrays", "[format][varbinview]") {
  auto empty = decode(node("vortex.varbinview", {}, {Buffer()}), DType::make_utf8(false), 0);
  REQUIRE(empty.ok());
  CHECK((*empty)->length == 0);
  CHECK((*empty)->string_views);

  // Views of null rows are not checked, and garbage there never reaches a consumer: it is
  // zeroed in a copy of the views.
  const std::string garbage = ref_view(99, 7, 1000) + ref_view(5, 9, 9);
  auto n = node("vortex.varbinview", {}, {bytes_of(garbage)}, {bool_node({false, false})});
  auto c = decode(n, DType::make_utf8(true), 2);
  REQUIRE(c.ok());
  CHECK((*c)->null_count == 2);
  CHECK(strings_of(**c) == std::vector<std::string>{"", ""});
  REQUIRE((*c)->buffers[0].size() == 32);
  CHECK(std::string(reinterpret_cast<const char*>((*c)->buffers[0].data()), 32) ==
        std::string(32, '\0'));
}

TEST_CASE("vortex.varbinview rejects views outside their buffers", "[format][varbinview]") {
  const auto t = DType::make_utf8(false);
  auto past_end =
      node("vortex.varbinview", {}, {bytes_of(std::string(20, 'x')), bytes_of(ref_view(13, 0, 8))});
  CHECK(decode(past_end, t, 1).error().code() == Errc::corrupt);
  auto bad_index =
      node("vortex.varbinview", {}, {bytes_of(std::string(20, 'x')), bytes_of(ref_view(13, 1, 0))});
  CHECK(decode(bad_index, t, 1).error().code() == Errc::corrupt);
  auto offset_overflow =
      node("vortex.varbinview", {},
           {bytes_of(std::string(20, 'x')), bytes_of(ref_view(0xffffffffu, 0, 0xfffffff0u))});
  CHECK(decode(offset_overflow, t, 1).error().code() == Errc::corrupt);
}

TEST_CASE("vortex.varbinview rejects malformed nodes", "[format][varbinview]") {
  const auto t = DType::make_utf8(false);
  CHECK(decode(node("vortex.varbinview"), t, 0).error().code() == Errc::corrupt);
  auto short_views = node("vortex.varbinview", {}, {bytes_of(std::string(15, '\0'))});
  CHECK(decode(short_views, t, 1).error().code() == Errc::corrupt);
  auto wrong_count = node("vortex.varbinview", {}, {bytes_of(inline_view("a") + inline_view("b"))});
  CHECK(decode(wrong_count, t, 1).error().code() == Errc::corrupt);
  auto with_metadata = node("vortex.varbinview", "x", {bytes_of(inline_view("a"))});
  CHECK(decode(with_metadata, t, 1).error().code() == Errc::corrupt);
  auto views = node("vortex.varbinview", {}, {bytes_of(inline_view("a"))});
  CHECK(decode(views, DType::make_primitive(PType::u8, false), 1).error().code() == Errc::corrupt);
  views.children.push_back(bool_node({true}));
  CHECK(decode(views, t, 1).error().code() == Errc::corrupt);  // validity on a non-nullable dtype
}
