// SPDX-License-Identifier: Apache-2.0
// vortex.runend: run-length encoding by run end positions.
//
//   dtype:     any type the values child can take (the writer emits it for bool, primitive and
//              string data, and for dictionary codes).
//   metadata:  RunEndMetadata { ends_ptype = 1, num_runs = 2, offset = 3 }
//              (format/proto/runend.proto).
//   buffers:   none.
//   children:  0  ends:   `num_runs` unsigned integers of ends_ptype, non-nullable, strictly
//                         ascending (readers binary-search them): run k covers physical rows
//                         [ends[k-1], ends[k]), with ends[-1] = 0;
//              1  values: `num_runs` values of the array's dtype (nulls included), one per run.
//   Logical row i is physical row offset + i. A sliced array keeps its runs: every end is at least
//   `offset`, and ends past offset + len are clipped to it. The runs must cover every row.
#include <algorithm>

#include "format/decode.hpp"
#include "format/encodings/integers.hpp"
#include "format/encodings/registry.hpp"
#include "format/proto/runend.pb.h"

namespace oc::format::encodings {
namespace {

Result<ColumnPtr> decode_runend(const ArrayView& node, const DTypePtr& t, uint64_t len,
                                DecodeContext& ctx) {
  OC_TRY(expect_shape(node, 0, 2, 2));
  OC_ASSIGN_OR_RETURN(auto meta,
                      parse_metadata<pb::RunEndMetadata>(node.metadata, "vortex.runend"));
  OC_ASSIGN_OR_RETURN(PType ends_ptype, ptype_from(meta.ends_ptype()));
  OC_EXPECT(!ptype_is_float(ends_ptype) && !ptype_is_signed(ends_ptype), corrupt,
            "run ends must be unsigned integers, got {}", ptype_name(ends_ptype));
  const uint64_t runs = meta.num_runs();
  const uint64_t offset = meta.offset();
  OC_TRY(ctx.check_alloc(saturating_bytes(len, sizeof(uint64_t)), "run-end row indices"));
  OC_ASSIGN_OR_RETURN(std::vector<uint64_t> ends,
                      decode_unsigned_child(node, 0, ends_ptype, runs, ctx, "run ends"));
  OC_ASSIGN_OR_RETURN(ColumnPtr values, ctx.decode(node.children[1], t, runs));
  // A zero-length slice may keep runs from anywhere in the original array.
  if (len == 0) return take(values, {});

  // Row i of the result is values[run of physical row offset + i], gathered by `take`.
  std::vector<uint64_t> run_of_row;
  run_of_row.reserve(len);
  for (uint64_t k = 0; k < runs; ++k) {
    const uint64_t end = ends[k];
    OC_EXPECT(k == 0 || end > ends[k - 1], corrupt,
              "run ends are not strictly ascending at run {} ({} after {})", k, end, ends[k - 1]);
    OC_EXPECT(end >= offset, corrupt, "run end {} is before the offset {}", end, offset);
    run_of_row.resize(std::min(end - offset, len), k);  // ascending ends never shrink it
  }
  OC_EXPECT(run_of_row.size() == len, corrupt, "{} runs from offset {} cover {} of {} rows", runs,
            offset, run_of_row.size(), len);
  return take(values, run_of_row);
}

}  // namespace

void register_runend() { register_encoding("vortex.runend", decode_runend); }

}  // namespace oc::format::encodings
