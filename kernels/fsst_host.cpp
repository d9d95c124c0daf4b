// SPDX-License-Identifier: Apache-2.0
// The host half of the GPU FSST decode: planning (the checks of format/encodings/fsst.cpp) and
// the reference executor. Built with and without CUDA.
#include <cstring>
#include <limits>

#include "format/encodings/fsst_table.hpp"
#include "format/encodings/integers.hpp"
#include "format/proto/fsst.pb.h"
#include "kernels/fsst.hpp"
#include "kernels/fsst_stages.hpp"

namespace oc::kernels {
namespace {

// An integer child of @p node decoded on the host, as u64.
Result<std::vector<uint64_t>> unsigned_child(const format::ArrayView& node, size_t index,
                                             uint64_t raw_ptype, uint64_t rows,
                                             format::DecodeContext& ctx, const char* what) {
  OC_ASSIGN_OR_RETURN(format::PType p, format::encodings::integer_ptype(raw_ptype, what));
  OC_ASSIGN_OR_RETURN(auto c, ctx.without_window([&] {
    return ctx.decode(node.children[index], format::DType::make_primitive(p, false), rows);
  }));
  return format::encodings::unsigned_rows(*c, what);
}

FsstParams bind(const FsstPlan& plan, const uint8_t* codes, int32_t const* offsets, uint8_t* data) {
  FsstParams p;
  p.symbols = plan.symbols.data();
  p.symbol_lengths = plan.symbol_lengths.data();
  p.num_symbols = static_cast<uint32_t>(plan.symbols.size());
  p.codes = codes;
  p.codes_size = plan.codes.size();
  p.code_offsets = plan.code_offsets.data();
  p.offsets = offsets;
  p.data = data;
  p.rows = plan.rows;
  return p;
}

}  // namespace

Result<FsstPlan> build_fsst_plan(const format::ArrayView& node, const format::DTypePtr& dtype,
                                 uint64_t len, format::DecodeContext& ctx) {
  OC_EXPECT(node.encoding == "vortex.fsst", unsupported, "{} is not vortex.fsst", node.encoding);
  const format::DType& st = dtype->storage();
  OC_EXPECT(st.kind == format::TypeKind::utf8 || st.kind == format::TypeKind::binary, corrupt,
            "vortex.fsst for {}", dtype->to_string());
  OC_EXPECT(node.buffers.size() == 3, unsupported,
            "vortex.fsst with {} buffers (the legacy form is not on the GPU)", node.buffers.size());
  OC_TRY(format::expect_shape(node, 3, 2, 3));
  OC_ASSIGN_OR_RETURN(auto meta,
                      format::parse_metadata<pb::FsstMetadata>(node.metadata, "vortex.fsst"));
  OC_ASSIGN_OR_RETURN(const auto table,
                      format::fsst::parse_symbol_table(node.buffers[0], node.buffers[1]));
  FsstPlan plan;
  plan.rows = len;
  plan.symbols.assign(table.symbols.begin(), table.symbols.begin() + table.size);
  plan.symbol_lengths.assign(table.lengths.begin(), table.lengths.begin() + table.size);
  plan.codes = node.buffers[2];
  OC_ASSIGN_OR_RETURN(plan.code_offsets, unsigned_child(node, 1, meta.codes_offsets_ptype(),
                                                        len + 1, ctx, "fsst codes offsets"));
  OC_ASSIGN_OR_RETURN(auto uncompressed, unsigned_child(node, 0, meta.uncompressed_lengths_ptype(),
                                                        len, ctx, "fsst uncompressed lengths"));
  OC_ASSIGN_OR_RETURN(const uint64_t total, format::fsst::total_row_bytes(uncompressed));
  plan.offsets.resize(len + 1);
  uint64_t at = 0;
  for (uint64_t i = 0; i < len; ++i) {
    plan.offsets[i] = static_cast<int32_t>(at);
    at += uncompressed[i];
  }
  plan.offsets[len] = static_cast<int32_t>(total);
  OC_ASSIGN_OR_RETURN(plan.validity,
                      format::decode_validity(node, 2, st.nullable, len, ctx, plan.null_count));
  return plan;
}

Result<std::vector<uint8_t>> run_fsst_on_host(const FsstPlan& plan) {
  std::vector<uint8_t> data(static_cast<size_t>(plan.offsets.back()));
  const FsstParams p = bind(plan, plan.codes.data(), plan.offsets.data(), data.data());
  for (uint64_t i = 0; i < plan.rows; ++i) {
    OC_EXPECT(fsst_decode_row(p, i), corrupt, "fsst row {} is corrupt", i);
  }
  return data;
}

}  // namespace oc::kernels
