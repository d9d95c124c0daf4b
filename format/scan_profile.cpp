// SPDX-License-Identifier: Apache-2.0
#include "format/scan_profile.hpp"

#include "format/reader.hpp"

namespace oc::format {

void set_reader_stages(ScanProfile& p, const ScanStats& s) {
  p.bytes_read = s.bytes_read;
  p.storage_ns = s.fetch_ns;
  // The filter's time includes decoding the columns it reads: all of it is decode work.
  p.decode_ns = s.plan_ns + s.filter_ns + s.decode_ns;
}

}  // namespace oc::format
