// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>

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
  const std::string s = e.to_string();
  CHECK(s.find("not_found: open /x") == 0);
  CHECK(s.find("No such file") != std::string::npos);
  CHECK(s.find("[opening dataset]") != std::string::npos);
  CHECK(s.find("f.cpp:7") != std::string::npos);
  CHECK(oc::errc_name(oc::Errc::corrupt) == "corrupt");
}
