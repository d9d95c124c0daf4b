// SPDX-License-Identifier: Apache-2.0
// Small files written by vortex-data 0.93 (tests/fuzz/make_seeds.py), checked in.
#pragma once

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace oc::test {

/// The checkout's files: $ONECOPY_SOURCE_DIR when set (a test binary carried to another machine,
/// such as the GPU check's), else the source directory the binary was built from.
inline std::string source_dir() {
  const char* env = std::getenv("ONECOPY_SOURCE_DIR");
  return env != nullptr ? env : OC_SOURCE_DIR;
}

inline std::string seed_path(const std::string& name) {
  return source_dir() + "/tests/fuzz/seeds/open_scan/" + name;
}

inline std::vector<uint8_t> read_seed(const std::string& name) {
  std::ifstream in(seed_path(name), std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace oc::test
