// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief One registration function per encoding unit (format/encodings/<name>.cpp), all called
/// by `register_default_encodings()`.
#pragma once

namespace oc::format::encodings {

void register_canonical();   // vortex.null, vortex.bool, vortex.primitive, vortex.struct
void register_constant();    // vortex.constant
void register_masked();      // vortex.masked
// @@ENCODING-DECLARATIONS@@ (helpers add their register_<name>() declarations above this line)

}  // namespace oc::format::encodings
