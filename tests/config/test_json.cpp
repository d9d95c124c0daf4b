// SPDX-License-Identifier: Apache-2.0
// JSON string literals: whatever bytes a file or a client supplied come out as JSON that parses.
#include <catch2/catch.hpp>

#include "config/json.hpp"

using oc::json_string;

TEST_CASE("json_string escapes quotes, backslashes and control characters", "[config][json]") {
  CHECK(json_string("plain") == "\"plain\"");
  CHECK(json_string("a\"b\\c") == "\"a\\\"b\\\\c\"");
  CHECK(json_string("\n\r\t") == "\"\\n\\r\\t\"");
  CHECK(json_string(std::string_view("\x1b[31m\0", 6)) == "\"\\u001b[31m\\u0000\"");
}

TEST_CASE("json_string keeps valid UTF-8 and replaces each invalid byte", "[config][json]") {
  CHECK(json_string("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80") ==
        "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"");
  CHECK(json_string("a\xff"
                    "b") == "\"a\\ufffdb\"");
  CHECK(json_string("\xc0\xaf") == "\"\\ufffd\\ufffd\"");             // overlong '/'
  CHECK(json_string("\xed\xa0\x80") == "\"\\ufffd\\ufffd\\ufffd\"");  // a UTF-16 surrogate
  CHECK(json_string("\xf4\x90\x80\x80") == "\"\\ufffd\\ufffd\\ufffd\\ufffd\"");  // past U+10FFFF
  CHECK(json_string("\xe2\x82") == "\"\\ufffd\\ufffd\"");  // cut short at the end
}
