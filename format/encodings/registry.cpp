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
    // @@ENCODING-REGISTRATIONS@@ (helpers add their register_<name>() calls above this line)
  });
}

}  // namespace oc::format
