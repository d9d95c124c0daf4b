// SPDX-License-Identifier: Apache-2.0
// Golden cases written by tests/format/golden/gen_*.py with the oracle: for each case NAME,
// NAME.segment (a flat segment), NAME.specs (its encoding IDs, one per line) and NAME.expected
// (the decoded values, in the format of the script that wrote it). This header finds and parses
// them; alp_golden.hpp, strings_golden.hpp and nested_golden.hpp compare the expected values.
#pragma once

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "format/array_tree.hpp"
#include "tests/format/fixtures.hpp"

namespace oc::test::golden {

/// tests/format/golden/NAME@p suffix (OC_SOURCE_DIR is set by tests/meson.build).
inline std::filesystem::path file(const std::string& name, const std::string& suffix) {
  return std::filesystem::path(OC_SOURCE_DIR) / "tests/format/golden" / (name + suffix);
}

inline std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline std::vector<std::string> read_lines(const std::filesystem::path& p) {
  std::vector<std::string> lines;
  std::ifstream in(p);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

/// Parses the segment of golden case @p name with its specs; fails the calling test if either
/// is missing or malformed.
inline ArrayView load_tree(const std::string& name) {
  INFO("golden case " << name << " at " << file(name, ".segment").string());
  const std::string segment = read_file(file(name, ".segment"));
  REQUIRE(!segment.empty());
  auto root = format::parse_array_tree(bytes_of(segment), read_lines(file(name, ".specs")));
  if (!root.ok()) FAIL(root.error().to_string());
  return *root;
}

}  // namespace oc::test::golden
