// SPDX-License-Identifier: Apache-2.0
// Walks a fusable chain from the root down: each op node appends its scalar op, the source node
// (bitpacked or primitive) ends the walk. Ops are collected outermost first and reversed, since
// the kernel applies them innermost first. Every check mirrors the CPU decoder's for that node,
// so a plan exists exactly when the CPU decode would succeed on the same tree.
#include "kernels/fused_plan.hpp"

#include <algorithm>
#include <cstring>

#include "format/encodings/accepts.hpp"
#include "format/encodings/decimal.hpp"
#include "format/encodings/dict.hpp"
#include "format/encodings/runend.hpp"
#include "format/patches.hpp"
#include "format/proto/alp.pb.h"
#include "format/proto/bitpacked.pb.h"
#include "format/proto/decimal_byte_parts.pb.h"
#include "format/proto/sequence.pb.h"
#include "format/scalar.hpp"
#include "kernels/config.cuh"
#include "kernels/fused_block.hpp"

namespace oc::kernels {
namespace {

using format::ArrayView;
using format::Buffer;
using format::DecodeContext;
using format::DType;
using format::DTypePtr;
using format::PType;
using format::TypeKind;
using format::encodings::kFastLanesBlock;
using format::encodings::packed_block_bytes;

struct Walk {
  FusedPlan& plan;
  std::vector<FusedOp> ops;            // outermost first
  std::vector<Buffer> dict_values;     // outermost first
  std::vector<std::string> encodings;  // outermost first
  DecodeContext& ctx;
};

// Decodes the validity child at @p index of @p node (if any) into the plan, on the host: one
// bit per row is small next to the values. Only the source carries validity in a chain.
Result<void> take_validity(FusedPlan& plan, const ArrayView& node, size_t index, const DTypePtr& t,
                           uint64_t len, DecodeContext& ctx) {
  if (node.children.size() <= index) return {};
  int64_t nulls = 0;
  OC_ASSIGN_OR_RETURN(Buffer validity,
                      format::decode_validity(node, index, t->storage().nullable, len, ctx, nulls));
  if (nulls == 0) return {};
  plan.validity = std::move(validity);
  plan.null_count = nulls;
  return {};
}

// Sets the bits of @p rows (< len) in @p validity, an Arrow bitmap of @p len rows (empty: all
// valid), and recounts @p null_count; a bitmap left without nulls becomes empty. Copies before
// writing: the bitmap may be shared with another.
void mark_valid(Buffer& validity, int64_t& null_count, const std::vector<uint64_t>& rows,
                uint64_t len) {
  if (validity.empty() || rows.empty()) return;
  Buffer out = Buffer::copy_of(validity.span());
  for (uint64_t r : rows) format::bitmap_set(out.mutable_data(), r, true);
  null_count = format::count_nulls(out.data(), 0, len);
  validity = null_count == 0 ? Buffer() : std::move(out);
}

// The ptype of an integer chain node, or the error the CPU decoder gives.
Result<PType> integer_ptype(const DTypePtr& t, const std::string& encoding) {
  const DType& storage = t->storage();
  OC_EXPECT(storage.kind == TypeKind::primitive && !format::ptype_is_float(storage.ptype), corrupt,
            "{} for {}", encoding, t->to_string());
  return storage.ptype;
}

// The values of a decoded fixed-width column, contiguous from row 0 and 8-byte aligned.
Result<Buffer> contiguous_values(const format::Column& c, size_t width) {
  OC_EXPECT(c.validity.empty(), unsupported,
            "dictionary values with nulls are not fused on the GPU yet");
  Buffer out = Buffer::allocate_array_for_overwrite(c.length, width);
  if (c.length > 0)
    std::memcpy(out.mutable_data(), c.buffers[0].data() + c.offset * width, out.size());
  return out;
}

Result<void> walk(Walk& w, const ArrayView& node, const DTypePtr& t, uint64_t len);

Result<void> walk_dict(Walk& w, const ArrayView& node, const DTypePtr& t, uint64_t len) {
  OC_ASSIGN_OR_RETURN(auto shape, format::encodings::parse_dict(node, t));
  const DType& storage = t->storage();
  OC_EXPECT(storage.kind == TypeKind::primitive, unsupported,
            "vortex.dict of {} is not fused on the GPU (fixed-width values only)", t->to_string());
  const size_t width = format::ptype_width(storage.ptype);
  OC_ASSIGN_OR_RETURN(auto values, w.ctx.without_window([&] {
    return w.ctx.decode(node.children[1], t, shape.values_len);
  }));
  OC_ASSIGN_OR_RETURN(Buffer contiguous, contiguous_values(*values, width));
  const PType codes = shape.codes_t->storage().ptype;
  FusedOp op;
  op.kind = FusedOpKind::dict;
  op.in_bytes = static_cast<uint8_t>(format::ptype_width(codes));
  op.out_bytes = static_cast<uint8_t>(width);
  op.codes_signed = format::ptype_is_signed(codes);
  op.values_len = shape.values_len;
  w.ops.push_back(op);
  w.dict_values.push_back(std::move(contiguous));
  return walk(w, node.children[0], shape.codes_t, len);
}

Result<void> walk_for(Walk& w, const ArrayView& node, const DTypePtr& t, uint64_t len) {
  OC_ASSIGN_OR_RETURN(const uint64_t reference, format::encodings::accept_for(node, t));
  FusedOp op;
  op.kind = FusedOpKind::frame_of_reference;
  op.in_bytes = op.out_bytes = static_cast<uint8_t>(format::ptype_width(t->storage().ptype));
  op.reference = reference;
  w.ops.push_back(op);
  return walk(w, node.children[0], t, len);
}

Result<void> walk_zigzag(Walk& w, const ArrayView& node, const DTypePtr& t, uint64_t len) {
  OC_ASSIGN_OR_RETURN(DTypePtr child_t, format::encodings::accept_zigzag(node, t));
  FusedOp op;
  op.kind = FusedOpKind::zigzag;
  op.in_bytes = op.out_bytes = static_cast<uint8_t>(format::ptype_width(t->storage().ptype));
  w.ops.push_back(op);
  return walk(w, node.children[0], child_t, len);
}

Result<void> walk_bitpacked(Walk& w, const ArrayView& node, const DTypePtr& t, uint64_t len) {
  OC_ASSIGN_OR_RETURN(auto meta, format::encodings::accept_bitpacked(node, t, len, w.ctx));
  const size_t value_bytes = format::ptype_width(t->storage().ptype);
  FusedPlan& plan = w.plan;
  plan.params.source = FusedSource::bitpacked;
  plan.params.packed_bytes = static_cast<uint8_t>(value_bytes);
  plan.params.bit_width = static_cast<uint8_t>(meta.bit_width());
  plan.params.offset = meta.offset();
  plan.packed = node.buffers[0];
  size_t validity_child = 0;
  if (meta.has_patches()) {
    OC_ASSIGN_OR_RETURN(auto patches, w.ctx.without_window([&] {
      return format::decode_patches(node, 0, meta.patches(), t, len, w.ctx, validity_child);
    }));
    OC_EXPECT(patches.values->validity.empty(), unsupported,
              "null patch values are not fused on the GPU yet");
    plan.patch_positions.reserve(patches.positions.size());
    plan.patch_values.reserve(patches.positions.size());
    const uint8_t* base = patches.values->buffers[0].data() + patches.values->offset * value_bytes;
    for (size_t i = 0; i < patches.positions.size(); ++i) {
      plan.patch_positions.push_back(patches.positions[i] + meta.offset());
      plan.patch_values.push_back(fused_load(base, i, static_cast<unsigned>(value_bytes)));
    }
  }
  OC_EXPECT(node.children.size() <= validity_child + 1, corrupt,
            "fastlanes.bitpacked has {} children, expected at most {}", node.children.size(),
            validity_child + 1);
  OC_TRY(take_validity(w.plan, node, validity_child, t, len, w.ctx));
  // A patched row takes its (non-null) patch value's validity, as format/patches.cpp does: the
  // ops already see the patched value there, so the source's bitmap changes, not only the output's.
  std::vector<uint64_t> rows(plan.patch_positions.size());
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = plan.patch_positions[i] - meta.offset();
  mark_valid(plan.validity, plan.null_count, rows, len);
  return {};
}

Result<void> walk_primitive(Walk& w, const ArrayView& node, const DTypePtr& t, uint64_t len) {
  OC_TRY(format::expect_shape(node, 1, 0, 1));
  const DType& storage = t->storage();
  OC_EXPECT(storage.kind == TypeKind::primitive, corrupt, "vortex.primitive for {}",
            t->to_string());
  const size_t width = format::ptype_width(storage.ptype);
  OC_EXPECT(holds_exactly(node.buffers[0].size(), len, width), corrupt,
            "primitive buffer is {} bytes, expected {} x {}", node.buffers[0].size(), len, width);
  w.plan.params.source = FusedSource::primitive;
  w.plan.params.packed_bytes = static_cast<uint8_t>(width);
  w.plan.packed = node.buffers[0];
  return take_validity(w.plan, node, 0, t, len, w.ctx);
}

Result<void> walk_sequence(Walk& w, const ArrayView& node, const DTypePtr& t) {
  OC_TRY(format::expect_shape(node, 0, 0, 0));
  OC_ASSIGN_OR_RETURN(PType p, integer_ptype(t, node.encoding));
  OC_ASSIGN_OR_RETURN(
      auto meta, format::parse_metadata<pb::SequenceMetadata>(node.metadata, "vortex.sequence"));
  auto field = [&](const std::string& bytes, const char* what) -> Result<uint64_t> {
    OC_ASSIGN_OR_RETURN(
        format::Scalar s,
        format::parse_scalar({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()}));
    OC_EXPECT(!s.is_null(), corrupt, "vortex.sequence {} is missing or null", what);
    return format::scalar_to_bits(s, p);
  };
  FusedParams& params = w.plan.params;
  params.source = FusedSource::sequence;
  params.packed_bytes = static_cast<uint8_t>(format::ptype_width(p));
  OC_ASSIGN_OR_RETURN(params.sequence_base, field(meta.base(), "base"));
  OC_ASSIGN_OR_RETURN(params.sequence_step, field(meta.multiplier(), "multiplier"));
  return {};
}

Result<void> walk_constant(Walk& w, const ArrayView& node, const DTypePtr& t) {
  OC_TRY(format::expect_shape(node, 1, 0, 0));
  const DType& storage = t->storage();
  OC_EXPECT(storage.kind == TypeKind::primitive, unsupported,
            "vortex.constant of {} is not fused on the GPU (fixed-width values only)",
            t->to_string());
  OC_ASSIGN_OR_RETURN(format::Scalar s, format::parse_scalar(node.buffers[0].span()));
  OC_EXPECT(!s.is_null(), unsupported, "a null vortex.constant is not fused on the GPU yet");
  FusedParams& params = w.plan.params;
  params.source = FusedSource::constant;
  params.packed_bytes = static_cast<uint8_t>(format::ptype_width(storage.ptype));
  OC_ASSIGN_OR_RETURN(params.constant_bits, format::scalar_to_bits(s, storage.ptype));
  params.constant_bits = fused_mask(params.constant_bits, params.packed_bytes);
  return {};
}

Result<void> walk_runend(Walk& w, const ArrayView& node, const DTypePtr& t, uint64_t len) {
  const DType& storage = t->storage();
  OC_EXPECT(storage.kind == TypeKind::primitive, unsupported,
            "vortex.runend of {} is not fused on the GPU (fixed-width values only)",
            t->to_string());
  OC_ASSIGN_OR_RETURN(auto runs, w.ctx.without_window([&] {
    return format::encodings::decode_run_ends(node, w.ctx);
  }));
  const uint64_t count = runs.ends.size();
  OC_EXPECT(len == 0 || (count > 0 && runs.ends.back() - runs.offset >= len), corrupt,
            "{} runs from offset {} do not cover {} rows", count, runs.offset, len);
  OC_ASSIGN_OR_RETURN(
      auto values, w.ctx.without_window([&] { return w.ctx.decode(node.children[1], t, count); }));
  const size_t width = format::ptype_width(storage.ptype);
  OC_ASSIGN_OR_RETURN(Buffer contiguous, contiguous_values(*values, width));
  FusedPlan& plan = w.plan;
  plan.params.source = FusedSource::runend;
  plan.params.packed_bytes = static_cast<uint8_t>(width);
  plan.params.run_offset = runs.offset;
  plan.run_ends = std::move(runs.ends);
  plan.run_values.resize(count);
  for (uint64_t k = 0; k < count; ++k)
    plan.run_values[k] = fused_load(contiguous.data(), k, static_cast<unsigned>(width));
  return {};
}

Result<void> walk_decimal_byte_parts(Walk& w, const ArrayView& node, const DTypePtr& t,
                                     uint64_t len) {
  OC_EXPECT(t->kind == TypeKind::decimal, corrupt, "vortex.decimal_byte_parts for {}",
            t->to_string());
  OC_ASSIGN_OR_RETURN(auto meta, format::parse_metadata<pb::DecimalBytePartsMetadata>(
                                     node.metadata, "vortex.decimal_byte_parts"));
  OC_EXPECT(meta.lower_part_count() == 0, unsupported,
            "vortex.decimal_byte_parts with {} lower parts", meta.lower_part_count());
  OC_TRY(format::expect_shape(node, 0, 1, 1));
  OC_ASSIGN_OR_RETURN(PType p,
                      format::ptype_from(static_cast<uint64_t>(meta.zeroth_child_ptype())));
  OC_EXPECT(!format::ptype_is_float(p) && format::ptype_is_signed(p), corrupt,
            "decimal part ptype {} is not a signed integer", format::ptype_name(p));
  FusedOp op;
  op.kind = FusedOpKind::widen_decimal;
  op.in_bytes = static_cast<uint8_t>(format::ptype_width(p));
  op.out_bytes = static_cast<uint8_t>(format::encodings::decimal_arrow_width(t->precision));
  w.ops.push_back(op);
  return walk(w, node.children[0], DType::make_primitive(p, t->nullable), len);
}

template <class Float>
uint64_t float_bits(Float f) {
  std::conditional_t<sizeof(Float) == 4, uint32_t, uint64_t> bits;
  std::memcpy(&bits, &f, sizeof(Float));
  return bits;
}

Result<void> walk_alp(Walk& w, const ArrayView& node, const DTypePtr& t, uint64_t len) {
  OC_ASSIGN_OR_RETURN(auto meta,
                      format::parse_metadata<pb::ALPMetadata>(node.metadata, "vortex.alp"));
  OC_EXPECT(t->kind == TypeKind::primitive && (t->ptype == PType::f32 || t->ptype == PType::f64),
            corrupt, "vortex.alp for {}", t->to_string());
  const bool f32 = t->ptype == PType::f32;
  const uint32_t e = meta.exp_e(), f = meta.exp_f();
  const uint32_t max = f32 ? format::alp::kMaxExponent<float> : format::alp::kMaxExponent<double>;
  OC_EXPECT(e <= max && f <= max, corrupt, "ALP exponents e={} f={} exceed {} for {}", e, f, max,
            t->to_string());
  const size_t patch_children = meta.has_patches() ? 2 : 0;
  OC_TRY(format::expect_shape(node, 0, 1 + patch_children, 1 + patch_children + 1));
  OC_EXPECT(w.plan.out_patch_rows.empty(), unsupported, "two patched ALP arrays in one chain");
  FusedOp op;
  op.kind = FusedOpKind::alp;
  op.in_bytes = op.out_bytes = f32 ? 4 : 8;
  op.f10_bits = f32 ? float_bits(format::alp::Powers<float>::kF10[f])
                    : float_bits(format::alp::Powers<double>::kF10[f]);
  op.if10_bits = f32 ? float_bits(format::alp::Powers<float>::kIF10[e])
                     : float_bits(format::alp::Powers<double>::kIF10[e]);
  w.ops.push_back(op);
  if (meta.has_patches()) {
    size_t used = 0;
    OC_ASSIGN_OR_RETURN(auto patches, w.ctx.without_window([&] {
      return format::decode_patches(node, 1, meta.patches(), t, len, w.ctx, used);
    }));
    OC_EXPECT(node.children.size() == 1 + used, corrupt, "vortex.alp has {} children, expected {}",
              node.children.size(), 1 + used);
    OC_EXPECT(patches.values->validity.empty(), unsupported,
              "null patch values are not fused on the GPU yet");
    const uint8_t* base = patches.values->buffers[0].data() + patches.values->offset * op.out_bytes;
    for (size_t i = 0; i < patches.positions.size(); ++i) {
      w.plan.out_patch_rows.push_back(patches.positions[i]);
      w.plan.out_patch_values.push_back(fused_load(base, i, op.out_bytes));
    }
  }
  return walk(w, node.children[0],
              DType::make_primitive(f32 ? PType::i32 : PType::i64, t->nullable), len);
}

Result<void> walk(Walk& w, const ArrayView& node, const DTypePtr& t, uint64_t len) {
  w.encodings.push_back(node.encoding);
  using Kind = format::EncodingKind;
  const Kind kind = format::encoding_kind(node.encoding);
  const bool is_op = kind == Kind::dict || kind == Kind::frame_of_reference ||
                     kind == Kind::zigzag || kind == Kind::decimal_byte_parts || kind == Kind::alp;
  OC_EXPECT(!is_op || w.ops.size() < kMaxFusedOps, unsupported,
            "more than {} fused ops in one chain", kMaxFusedOps);
  switch (kind) {
    case Kind::dict:
      return walk_dict(w, node, t, len);
    case Kind::frame_of_reference:
      return walk_for(w, node, t, len);
    case Kind::zigzag:
      return walk_zigzag(w, node, t, len);
    case Kind::alp:
      return walk_alp(w, node, t, len);
    case Kind::decimal_byte_parts:
      return walk_decimal_byte_parts(w, node, t, len);
    case Kind::bitpacked:
      return walk_bitpacked(w, node, t, len);
    case Kind::primitive:
      return walk_primitive(w, node, t, len);
    case Kind::sequence:
      return walk_sequence(w, node, t);
    case Kind::constant:
      return walk_constant(w, node, t);
    case Kind::runend:
      return walk_runend(w, node, t, len);
    case Kind::ext:
      OC_TRY(format::expect_shape(node, 0, 1, 1));
      OC_EXPECT(t->kind == TypeKind::extension && node.metadata.empty(), corrupt,
                "vortex.ext for {}", t->to_string());
      return walk(w, node.children[0], t->children[0], len);
    case Kind::other:
      break;
  }
  return OC_ERROR(Errc::unsupported, "{} is not fused on the GPU", node.encoding);
}

}  // namespace

uint64_t FusedPlan::input_bytes() const noexcept {
  uint64_t bytes = packed.size() + validity.size() +
                   (patch_positions.size() + patch_values.size() + run_ends.size() +
                    run_values.size() + out_patch_rows.size() + out_patch_values.size()) *
                       sizeof(uint64_t);
  for (const auto& d : dict_values) bytes += d.size();
  return bytes;
}

Result<FusedPlan> build_fused_plan(const ArrayView& node, const DTypePtr& dtype, uint64_t len,
                                   DecodeContext& ctx) {
  FusedPlan plan;
  plan.dtype = dtype;
  plan.params.len = len;
  Walk w{plan, {}, {}, {}, ctx};
  OC_TRY(walk(w, node, dtype, len));
  std::reverse(w.ops.begin(), w.ops.end());
  std::reverse(w.dict_values.begin(), w.dict_values.end());
  plan.params.op_count = static_cast<uint32_t>(w.ops.size());
  std::copy(w.ops.begin(), w.ops.end(), plan.params.ops);
  plan.dict_values = std::move(w.dict_values);
  plan.params.patch_count = plan.patch_positions.size();
  plan.params.run_count = plan.run_ends.size();
  plan.params.out_patch_count = plan.out_patch_rows.size();
  // ALP's patched rows take their (non-null) patch value's validity in the output only: the ops
  // below ALP still see the source's nulls, as the CPU decoder decodes the child before patching.
  plan.source_validity = plan.validity;
  mark_valid(plan.validity, plan.null_count, plan.out_patch_rows, len);
  for (size_t i = 0; i < w.encodings.size(); ++i) {
    plan.description += (i == 0 ? "" : " > ") + w.encodings[i];
  }
  return plan;
}

FusedParams bind_host(const FusedPlan& plan, void* out, uint32_t* error) {
  FusedParams p = plan.params;
  p.packed = plan.packed.data();
  p.patch_positions = plan.patch_positions.data();
  p.patch_values = plan.patch_values.data();
  p.run_ends = plan.run_ends.data();
  p.run_values = plan.run_values.data();
  p.out_patch_rows = plan.out_patch_rows.data();
  p.out_patch_values = plan.out_patch_values.data();
  p.validity = plan.source_validity.empty() ? nullptr : plan.source_validity.data();
  size_t dict = 0;
  for (uint32_t k = 0; k < p.op_count; ++k) {
    if (p.ops[k].kind == FusedOpKind::dict) p.ops[k].values = plan.dict_values[dict++].data();
  }
  p.out = out;
  p.error = error;
  return p;
}

namespace {

// kernels/fused_block.hpp's Block on the host: a phase runs every thread, last thread first,
// and must follow a barrier; `barriers_ok` says whether every phase did.
class HostBlock {
 public:
  [[nodiscard]] unsigned threads() const { return kThreadsPerBlock; }
  template <class F>
  void each(F&& f) {
    if (in_phase_) barriers_ok_ = false;
    for (unsigned k = kThreadsPerBlock; k-- > 0;) f(k);
    in_phase_ = true;
  }
  void sync() { in_phase_ = false; }
  void report(uint32_t* word, uint32_t bits) { *word |= bits; }
  [[nodiscard]] bool barriers_ok() const { return barriers_ok_ && !in_phase_; }

 private:
  bool in_phase_ = false;
  bool barriers_ok_ = true;
};

// The host runs a grid this small, so that every block strides over several tiles as the
// kernel's blocks do past kMaxGridBlocks.
constexpr uint64_t kHostGridBlocks = 3;

uint64_t host_grid(uint64_t tiles) { return tiles < kHostGridBlocks ? tiles : kHostGridBlocks; }

// Segment buffers are normally aligned to the value width, rarely not: the kernel's loads need
// alignment, so the host copies those (the device staging aligns every part).
const FusedPlan& aligned_for_loads(const FusedPlan& plan, FusedPlan& copy) {
  if (plan.packed.empty() ||
      reinterpret_cast<uintptr_t>(plan.packed.data()) % plan.params.packed_bytes == 0) {
    return plan;
  }
  copy = plan;
  copy.packed = Buffer::copy_of(plan.packed.span());
  return copy;
}

Result<void> check_host_run(const HostBlock& b, uint32_t error, const std::string& description) {
  OC_EXPECT(b.barriers_ok(), invalid,
            "the fused tile body ran a phase without a barrier before it ({})", description);
  OC_EXPECT((error & kFusedErrorDictCode) == 0, corrupt, "dict code out of range in {}",
            description);
  return {};
}

}  // namespace

Result<Buffer> run_plan_on_host(const FusedPlan& plan) {
  Buffer out = Buffer::allocate(plan.output_bytes());
  FusedPlan copy;
  const FusedPlan& source = aligned_for_loads(plan, copy);
  uint32_t error = 0;
  const FusedParams p = bind_host(source, out.mutable_data(), &error);
  HostBlock b;
  std::vector<uint64_t> tile(kFastLanesBlock);
  const uint64_t grid = host_grid(p.tiles());
  for (uint64_t block = 0; block < grid && p.len > 0; ++block) {
    switch (p.packed_bytes) {
      case 1:
        fused_decode_grid(p, block, grid, b, reinterpret_cast<uint8_t*>(tile.data()));
        break;
      case 2:
        fused_decode_grid(p, block, grid, b, reinterpret_cast<uint16_t*>(tile.data()));
        break;
      case 4:
        fused_decode_grid(p, block, grid, b, reinterpret_cast<uint32_t*>(tile.data()));
        break;
      default:
        fused_decode_grid(p, block, grid, b, tile.data());
        break;
    }
  }
  OC_TRY(check_host_run(b, error, plan.description));
  return out;
}

Result<std::vector<Buffer>> run_batch_on_host(std::span<const FusedPlan* const> plans) {
  std::vector<FusedPlan> copies(plans.size());
  std::vector<Buffer> outs;
  std::vector<uint32_t> errors(plans.size(), 0);
  std::vector<FusedParams> params;
  std::vector<uint64_t> starts{0};
  for (size_t i = 0; i < plans.size(); ++i) {
    outs.push_back(Buffer::allocate(plans[i]->output_bytes()));
    params.push_back(
        bind_host(aligned_for_loads(*plans[i], copies[i]), outs[i].mutable_data(), &errors[i]));
    starts.push_back(starts.back() + (params[i].len == 0 ? 0 : params[i].tiles()));
  }
  const FusedBatchParams batch{params.data(), starts.data(), static_cast<uint32_t>(plans.size()),
                               starts.back()};
  HostBlock b;
  std::vector<uint64_t> tile(kFastLanesBlock);
  const uint64_t grid = host_grid(batch.total_tiles);
  for (uint64_t block = 0; block < grid; ++block)
    fused_decode_batch_grid(batch, block, grid, b, tile.data());
  for (size_t i = 0; i < plans.size(); ++i)
    OC_TRY(check_host_run(b, errors[i], plans[i]->description));
  return outs;
}

}  // namespace oc::kernels
