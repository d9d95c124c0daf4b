// SPDX-License-Identifier: Apache-2.0
#include "format/fuzz.hpp"

#include "format/reader.hpp"

namespace oc::format {

Result<void> fuzz_open_scan(std::span<const uint8_t> bytes) {
  OC_ASSIGN_OR_RETURN(auto file, VortexFile::open(memory_source(Buffer::copy_of(bytes), "fuzz input")));
  OC_ASSIGN_OR_RETURN(auto scan, file->scan({}));
  while (true) {
    OC_ASSIGN_OR_RETURN(auto batch, scan->next());
    if (!batch) return {};
  }
}

}  // namespace oc::format
