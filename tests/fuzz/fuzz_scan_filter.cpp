// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: the input is a SQL filter, run as a scan of the mixed seed file (every type
// the binder and evaluators handle: integers with nulls, doubles, strings, bools, lists,
// timestamps), so parsing, binding, pruning and evaluation all see real columns.
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <string_view>
#include <vector>

#include "format/fuzz.hpp"

namespace {
std::vector<uint8_t> g_file;
}

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  std::ifstream in(OC_SOURCE_DIR "/tests/fuzz/seeds/open_scan/mixed.vortex", std::ios::binary);
  g_file.assign(std::istreambuf_iterator<char>(in), {});
  return g_file.empty() ? 1 : 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)oc::format::fuzz_filtered_scan(g_file, {reinterpret_cast<const char*>(data), size});
  return 0;
}
