// SPDX-License-Identifier: Apache-2.0
/// @file
/// @brief One registration function per encoding unit (format/encodings/<name>.cpp), all called
/// by `register_default_encodings()`.
#pragma once

namespace oc::format::encodings {

void register_canonical();           // vortex.null, vortex.bool, vortex.primitive, vortex.struct
void register_constant();            // vortex.constant
void register_masked();              // vortex.masked
void register_list();                // vortex.list
void register_listview();            // vortex.listview
void register_fixed_size_list();     // vortex.fixed_size_list
void register_decimal();             // vortex.decimal
void register_decimal_byte_parts();  // vortex.decimal_byte_parts
void register_ext();                 // vortex.ext
void register_datetime_parts();      // vortex.datetimeparts
void register_bytebool();            // vortex.bytebool
void register_chunked();             // vortex.chunked (array encoding)
void register_alp();                 // vortex.alp
void register_alprd();               // vortex.alprd
void register_runend();              // vortex.runend
void register_sparse();              // vortex.sparse
void register_varbinview();          // vortex.varbinview
void register_varbin();              // vortex.varbin
void register_fsst();                // vortex.fsst
void register_dict();                // vortex.dict (the array encoding)
void register_zstd();                // vortex.zstd
void register_bitpacked();           // fastlanes.bitpacked
void register_for();                 // fastlanes.for
void register_zigzag();              // vortex.zigzag
void register_sequence();            // vortex.sequence
void register_rle();                 // fastlanes.rle
void register_onpair();              // vortex.onpair
void register_pco();                 // vortex.pco, vortex.pco.v2
void register_delta();               // fastlanes.delta
// @@ENCODING-DECLARATIONS@@ (helpers add their register_<name>() declarations above this line)

}  // namespace oc::format::encodings
