// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>
#include <cstdlib>
#include <stdexcept>
#include <string_view>

#include "config/error.hpp"

namespace {
oc::Result<int> half(int x) {
  OC_EXPECT(x % 2 == 0, invalid, "{} is odd", x);
  return x / 2;
}
oc::Result<int> quarter(int x) {
  OC_ASSIGN_OR_RETURN(int h, half(x));
  OC_ASSIGN_OR_RETURN(int q, half(h));
  return q;
}
oc::Result<void> check_quarter(int x) {
  OC_TRY(quarter(x));
  return {};
}
}  // namespace

TEST_CASE("Result carries values and errors through the macros", "[config]") {
  CHECK(*quarter(8) == 2);
  auto r = quarter(6);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code() == oc::Errc::invalid);
  CHECK(r.error().message() == "3 is odd");
  CHECK(check_quarter(4).ok());
  CHECK_FALSE(check_quarter(2).ok());
}

TEST_CASE("Error renders code, errno, context and origin", "[config]") {
  auto e = oc::errno_error(-ENOENT, "open /x", "f.cpp", 7);
  e.with_context("opening dataset");
  CHECK(e.code() == oc::Errc::not_found);
  const std::string s = e.located();
  CHECK(s.find("not_found: open /x") == 0);
  CHECK(s.find("No such file") != std::string::npos);
  CHECK(s.find("[opening dataset]") != std::string::npos);
  CHECK(s.find("f.cpp:7") != std::string::npos);
  CHECK(oc::errc_name(oc::Errc::corrupt) == "corrupt");
}

TEST_CASE("describe() is located() without the source position", "[config]") {
  auto e = oc::errno_error(-EACCES, "open /x", "f.cpp", 7);
  e.with_context("opening dataset");
  CHECK(e.describe().find("f.cpp") == std::string::npos);
  CHECK(e.describe().find("[opening dataset]") != std::string::npos);
  CHECK(e.located() == e.describe() + " [at f.cpp:7]");
}

TEST_CASE("to_string() carries the source position only under ONECOPY_DEBUG=1", "[config]") {
  const char* env = std::getenv("ONECOPY_DEBUG");
  CHECK(oc::debug_positions() == (env != nullptr && std::string_view(env) == "1"));
  const auto e = oc::Error(oc::Errc::corrupt, "bad footer", "f.cpp", 9);
  CHECK(e.to_string() == (oc::debug_positions() ? e.located() : e.describe()));
  CHECK(oc::Error(oc::Errc::io, "x").located() == "io: x");  // no origin, nothing to add
}

TEST_CASE("every error code has a name that maps back to it", "[config]") {
  for (int c = 0; c <= static_cast<int>(oc::kLastErrc); ++c) {
    const auto code = static_cast<oc::Errc>(c);
    INFO(c);
    CHECK(oc::errc_name(code) != "unknown");
    CHECK(oc::errc_from_name(oc::errc_name(code)) == code);
  }
  CHECK(oc::errc_name(oc::Errc::denied) == "denied");
  CHECK_FALSE(oc::errc_from_name("nonsense").has_value());
}

TEST_CASE("catch_all turns exceptions into errors", "[config]") {
  auto oom = oc::catch_all("decoding", []() -> oc::Result<int> { throw std::bad_alloc(); });
  REQUIRE_FALSE(oom.ok());
  CHECK(oom.error().code() == oc::Errc::out_of_memory);
  CHECK(oom.error().message() == "decoding: out of memory");
  auto other = oc::catch_all("x", []() -> oc::Result<int> { throw std::runtime_error("boom"); });
  REQUIRE_FALSE(other.ok());
  CHECK(other.error().message() == "x: boom");
  CHECK(*oc::catch_all("x", []() -> oc::Result<int> { return 3; }) == 3);
}
