// SPDX-License-Identifier: Apache-2.0
// The host half of the GPU ALP-RD decode: planning (the checks of format/encodings/alprd.cpp)
// and the reference executor. Built with and without CUDA.
#include <cstring>

#include "format/patches.hpp"
#include "format/proto/alprd.pb.h"
#include "kernels/alprd.hpp"

namespace oc::kernels {

Result<AlprdPlan> build_alprd_plan(const format::ArrayView& node, const format::DTypePtr& dtype,
                                   uint64_t len, format::DecodeContext& ctx) {
  OC_EXPECT(node.encoding == "vortex.alprd", unsupported, "{} is not vortex.alprd", node.encoding);
  OC_ASSIGN_OR_RETURN(auto meta,
                      format::parse_metadata<pb::ALPRDMetadata>(node.metadata, "vortex.alprd"));
  OC_EXPECT(dtype->kind == format::TypeKind::primitive &&
                (dtype->ptype == format::PType::f32 || dtype->ptype == format::PType::f64),
            corrupt, "vortex.alprd for {}", dtype->to_string());
  const bool f32 = dtype->ptype == format::PType::f32;
  const unsigned bytes = f32 ? 4 : 8;
  const uint32_t shift = meta.right_bit_width();
  OC_EXPECT(shift < bytes * 8, corrupt, "ALP-RD right bit width {} for {}", shift,
            dtype->to_string());
  OC_EXPECT(meta.dict_len() <= static_cast<uint64_t>(meta.dict_size()), corrupt,
            "ALP-RD dictionary length {} but {} entries", meta.dict_len(), meta.dict_size());
  format::Buffer dict = format::Buffer::allocate_array(meta.dict_len(), bytes);
  for (uint32_t k = 0; k < meta.dict_len(); ++k) {
    OC_EXPECT(meta.dict(static_cast<int>(k)) <= 0xFFFF, corrupt,
              "ALP-RD dictionary entry {} does not fit 16 bits", meta.dict(static_cast<int>(k)));
    fused_store(dict.mutable_data(), k, bytes,
                static_cast<uint64_t>(meta.dict(static_cast<int>(k))) << shift);
  }
  OC_ASSIGN_OR_RETURN(format::PType left_ptype, format::ptype_from(meta.left_parts_ptype()));
  OC_EXPECT(left_ptype == format::PType::u16, unsupported, "ALP-RD left parts of type {}",
            format::ptype_name(left_ptype));
  const size_t patch_children = meta.has_patches() ? 2 : 0;
  OC_TRY(format::expect_shape(node, 0, 2 + patch_children, 2 + patch_children + 1));

  AlprdPlan plan;
  const auto left_type = format::DType::make_primitive(format::PType::u16, dtype->nullable);
  OC_ASSIGN_OR_RETURN(plan.left, build_fused_plan(node.children[0], left_type, len, ctx));
  OC_ASSIGN_OR_RETURN(plan.right,
                      build_fused_plan(node.children[1],
                                       format::DType::make_primitive(
                                           f32 ? format::PType::u32 : format::PType::u64, false),
                                       len, ctx));
  FusedParams& lp = plan.left.params;
  OC_EXPECT(lp.op_count < kMaxFusedOps && plan.left.out_patch_rows.empty(), unsupported,
            "ALP-RD left parts chain too long to fuse");
  FusedOp op;
  op.kind = FusedOpKind::dict;
  op.in_bytes = 2;
  op.out_bytes = static_cast<uint8_t>(bytes);
  op.values_len = meta.dict_len();
  lp.ops[lp.op_count++] = op;
  plan.left.dict_values.push_back(std::move(dict));
  plan.left.description = "vortex.alprd > " + plan.left.description;
  if (meta.has_patches()) {
    size_t used = 0;
    OC_ASSIGN_OR_RETURN(auto patches, ctx.without_window([&] {
      return format::decode_patches(node, 2, meta.patches(), left_type->with_nullable(false), len,
                                    ctx, used);
    }));
    OC_EXPECT(node.children.size() == 2 + used, corrupt,
              "vortex.alprd has {} children, expected {}", node.children.size(), 2 + used);
    const uint16_t* lefts = patches.values->values<uint16_t>();
    for (size_t k = 0; k < patches.positions.size(); ++k) {
      plan.left.out_patch_rows.push_back(patches.positions[k]);
      plan.left.out_patch_values.push_back(
          fused_mask(static_cast<uint64_t>(lefts[k]) << shift, bytes));
    }
    lp.out_patch_count = plan.left.out_patch_rows.size();
    lp.out_patches_cover_codes = true;  // the CPU decoder forgives codes under patches too
  }
  return plan;
}

Result<format::Buffer> run_alprd_on_host(const AlprdPlan& plan) {
  OC_ASSIGN_OR_RETURN(format::Buffer left, run_plan_on_host(plan.left));
  OC_ASSIGN_OR_RETURN(format::Buffer right, run_plan_on_host(plan.right));
  uint8_t* out = left.mutable_data();
  for (size_t i = 0; i < left.size(); ++i) out[i] = static_cast<uint8_t>(out[i] | right.data()[i]);
  return left;
}

}  // namespace oc::kernels
