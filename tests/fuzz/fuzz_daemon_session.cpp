// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: sequences of client messages through onecopyd's dispatch and batch
// pipeline (daemon::fuzz_session), with a small real Vortex file to open by descriptor.
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <vector>

#include "config/log.hpp"
#include "daemon/fuzz_session.hpp"

namespace {
std::vector<uint8_t> g_file;
}

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (!oc::log::init("off").ok()) return 1;  // refusals are logged, and the log is not the subject
  std::ifstream in(OC_SOURCE_DIR "/tests/fuzz/seeds/open_scan/tiny.vortex", std::ios::binary);
  g_file.assign(std::istreambuf_iterator<char>(in), {});
  return g_file.empty() ? 1 : 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  oc::daemon::fuzz_session({data, size}, g_file);
  return 0;
}
