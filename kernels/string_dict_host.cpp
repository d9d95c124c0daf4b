// SPDX-License-Identifier: Apache-2.0
// The host half of the string dictionary decode: planning and the reference executor. Built
// with and without CUDA.
#include <algorithm>
#include <limits>
#include <utility>

#include "format/encodings/dict.hpp"
#include "format/string_views.hpp"
#include "kernels/string_dict.hpp"
#include "kernels/string_dict_stages.hpp"

namespace oc::kernels {

Result<StringDictPlan> build_string_dict_plan(const format::ArrayView& node,
                                              const format::DTypePtr& dtype, uint64_t len,
                                              format::DecodeContext& ctx) {
  OC_EXPECT(node.encoding == "vortex.dict", unsupported, "{} is not a string dictionary",
            node.encoding);
  const format::DType& storage = dtype->storage();
  OC_EXPECT(storage.kind == format::TypeKind::utf8 || storage.kind == format::TypeKind::binary,
            unsupported, "vortex.dict of {} is not a string dictionary", dtype->to_string());
  OC_ASSIGN_OR_RETURN(auto shape, format::encodings::parse_dict(node, dtype));
  StringDictPlan plan;
  plan.dtype = dtype;
  OC_ASSIGN_OR_RETURN(plan.codes, build_fused_plan(node.children[0], shape.codes_t, len, ctx));
  plan.codes_signed = format::ptype_is_signed(shape.codes_t->storage().ptype);
  OC_ASSIGN_OR_RETURN(auto decoded, ctx.without_window([&] {
    return ctx.decode(node.children[1], dtype, shape.values_len);
  }));
  OC_ASSIGN_OR_RETURN(auto values, format::string_offsets(decoded));
  OC_EXPECT(values->validity.empty(), unsupported,
            "string dictionary values with nulls are not decoded on the GPU yet");
  const int32_t* o = values->offsets();
  plan.value_offsets.assign(o, o + shape.values_len + 1);
  plan.value_bytes = values->buffers[1];
  for (uint64_t k = 0; k < shape.values_len; ++k) {
    plan.max_value_len =
        std::max<uint64_t>(plan.max_value_len, static_cast<uint64_t>(o[k + 1] - o[k]));
  }
  OC_EXPECT(plan.data_bytes_bound() <= static_cast<uint64_t>(std::numeric_limits<int32_t>::max()),
            unsupported, "{} rows of up to {} bytes may pass int32 offsets", len,
            plan.max_value_len);
  return plan;
}

Result<HostStrings> run_string_dict_on_host(const StringDictPlan& plan) {
  OC_ASSIGN_OR_RETURN(format::Buffer codes, run_plan_on_host(plan.codes));
  const uint64_t n = plan.rows();
  HostStrings out;
  out.offsets.assign(n + 1, 0);
  out.validity = plan.codes.validity;
  StringDictParams p;
  p.codes = codes.data();
  p.code_bytes = static_cast<uint8_t>(plan.codes.params.out_bytes());
  p.codes_signed = plan.codes_signed;
  p.validity = plan.codes.validity.empty() ? nullptr : plan.codes.validity.data();
  p.rows = n;
  p.value_offsets = plan.value_offsets.data();
  p.values_len = plan.value_offsets.size() - 1;
  p.value_bytes = plan.value_bytes.data();
  p.offsets = out.offsets.data();
  uint32_t error = 0;
  for (uint64_t i = 0; i < n; ++i) out.offsets[i] = string_dict_length(p, i, error);
  OC_EXPECT((error & kFusedErrorDictCode) == 0, corrupt, "dict code out of range");
  int32_t sum = 0;  // the exclusive scan the device does with CUB
  for (uint64_t i = 0; i <= n; ++i) sum += std::exchange(out.offsets[i], sum);
  out.data.resize(static_cast<size_t>(out.offsets[n]));
  p.data = out.data.data();
  for (uint64_t i = 0; i < n; ++i) string_dict_gather(p, i);
  return out;
}

}  // namespace oc::kernels
