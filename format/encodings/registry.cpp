// SPDX-License-Identifier: Apache-2.0
#include "format/encodings/registry.hpp"

#include <mutex>

#include "format/decode.hpp"

namespace oc::format {

void register_default_encodings() {
  static std::once_flag once;
  std::call_once(once, [] {
    encodings::register_canonical();
    encodings::register_constant();
    encodings::register_masked();
    encodings::register_list();
    encodings::register_listview();
    encodings::register_fixed_size_list();
    encodings::register_decimal();
    encodings::register_decimal_byte_parts();
    encodings::register_ext();
    encodings::register_datetime_parts();
    encodings::register_bytebool();
    encodings::register_chunked();
    encodings::register_alp();
    encodings::register_alprd();
    encodings::register_runend();
    encodings::register_sparse();
    encodings::register_varbinview();
    encodings::register_varbin();
    encodings::register_fsst();
    encodings::register_dict();
    encodings::register_zstd();
    encodings::register_bitpacked();
    encodings::register_for();
    encodings::register_zigzag();
    encodings::register_sequence();
    encodings::register_rle();
    encodings::register_onpair();
    encodings::register_delta();
    encodings::register_pco();
    // @@ENCODING-REGISTRATIONS@@ (helpers add their register_<name>() calls above this line)
  });
}

}  // namespace oc::format
