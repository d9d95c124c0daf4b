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
//
// A take finds each row's run by binary search over the ends and takes only those runs' values.
#include "format/encodings/runend.hpp"

#include <algorithm>

#include "format/decode.hpp"
#include "format/encodings/integers.hpp"
#include "format/encodings/registry.hpp"
#include "format/proto/runend.pb.h"

namespace oc::format::encodings {

Result<RunEnds> decode_run_ends(const ArrayView& node, DecodeContext& ctx) {
  OC_TRY(expect_shape(node, 0, 2, 2));
  OC_ASSIGN_OR_RETURN(auto meta,
                      parse_metadata<pb::RunEndMetadata>(node.metadata, "vortex.runend"));
  OC_ASSIGN_OR_RETURN(PType ends_ptype, ptype_from(meta.ends_ptype()));
  OC_EXPECT(!ptype_is_float(ends_ptype) && !ptype_is_signed(ends_ptype), corrupt,
            "run ends must be unsigned integers, got {}", ptype_name(ends_ptype));
  const uint64_t runs = meta.num_runs();
  const uint64_t offset = meta.offset();
  // vortex-data: "non-zero offset provided for empty RunEndArray".
  OC_EXPECT(runs != 0 || offset == 0, corrupt, "vortex.runend has no runs but an offset of {}",
            offset);
  RunEnds out;
  out.offset = offset;
  OC_ASSIGN_OR_RETURN(out.ends, decode_unsigned_child(node, 0, ends_ptype, runs, ctx, "run ends"));
  const std::vector<uint64_t>& ends = out.ends;
  for (uint64_t k = 0; k < runs; ++k) {
    OC_EXPECT(k == 0 || ends[k] > ends[k - 1], corrupt,
              "run ends are not strictly ascending at run {} ({} after {})", k, ends[k],
              ends[k - 1]);
    OC_EXPECT(ends[k] >= offset, corrupt, "run end {} is before the offset {}", ends[k], offset);
  }
  return out;
}

namespace {

Result<ColumnPtr> decode_runend(const ArrayView& node, const DTypePtr& t, uint64_t len,
                                DecodeContext& ctx) {
  OC_TRY(ctx.check_alloc(len, sizeof(uint64_t), "run-end row indices"));
  OC_ASSIGN_OR_RETURN(RunEnds re, decode_run_ends(node, ctx));
  const uint64_t runs = re.ends.size(), offset = re.offset;
  OC_ASSIGN_OR_RETURN(ColumnPtr values, ctx.decode(node.children[1], t, runs));
  // A zero-length slice may keep runs from anywhere in the original array.
  if (len == 0) return take(values, {});

  // Row i of the result is values[run of physical row offset + i], gathered by `take`.
  std::vector<uint64_t> run_of_row;
  run_of_row.reserve(len);
  for (uint64_t k = 0; k < runs; ++k) {
    run_of_row.resize(std::min(re.ends[k] - offset, len), k);  // ascending ends never shrink it
  }
  OC_EXPECT(run_of_row.size() == len, corrupt, "{} runs from offset {} cover {} of {} rows", runs,
            offset, run_of_row.size(), len);
  return take(values, run_of_row);
}

Result<ColumnPtr> take_runend(const ArrayView& node, const DTypePtr& t, uint64_t,
                              std::span<const uint64_t> rows, DecodeContext& ctx) {
  OC_ASSIGN_OR_RETURN(RunEnds re, decode_run_ends(node, ctx));
  // Row r lies in the first run whose end is past physical row offset + r. Rows ascend, so
  // their runs do too: `runs` lists each distinct one once, `which` points into it.
  std::vector<uint64_t> runs, which(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    const uint64_t physical = re.offset + rows[i];
    const auto it = std::upper_bound(re.ends.begin(), re.ends.end(), physical);
    OC_EXPECT(it != re.ends.end(), corrupt, "{} runs from offset {} end before row {}",
              re.ends.size(), re.offset, rows[i]);
    const auto run = static_cast<uint64_t>(it - re.ends.begin());
    if (runs.empty() || runs.back() != run) runs.push_back(run);
    which[i] = runs.size() - 1;
  }
  OC_ASSIGN_OR_RETURN(ColumnPtr values, ctx.decode_take(node.children[1], t, re.ends.size(), runs));
  return take(values, which);
}

}  // namespace

void register_runend() {
  register_encoding("vortex.runend", decode_runend);
  register_take("vortex.runend", take_runend);
}

}  // namespace oc::format::encodings
