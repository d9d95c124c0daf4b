// SPDX-License-Identifier: Apache-2.0
// Small files written by vortex-data 0.93 (tests/fuzz/make_seeds.py), checked in.
#pragma once

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace oc::test {

inline std::string seed_path(const std::string& name) {
  return std::string(OC_SOURCE_DIR) + "/tests/fuzz/seeds/open_scan/" + name;
}

inline std::vector<uint8_t> read_seed(const std::string& name) {
  std::ifstream in(seed_path(name), std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace oc::test
