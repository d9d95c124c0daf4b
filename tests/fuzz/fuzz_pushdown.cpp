// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: the input is an onecopy.scan request (format/fbs/pushdown.fbs) as an OSD
// receives it, run by the object class's method body over the mixed seed file (every type the
// reader, the filter and the Arrow IPC writer handle), so the request's decode, its projection,
// filter and row range, and the capped stream all see real columns.
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <iterator>
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
  (void)oc::format::fuzz_pushdown(g_file, {data, size});
  return 0;
}
