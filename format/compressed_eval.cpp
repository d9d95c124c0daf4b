// SPDX-License-Identifier: Apache-2.0
#include "format/compressed_eval.hpp"

#include <algorithm>
#include <string_view>
#include <utility>

#include "format/encodings/dict.hpp"
#include "format/encodings/integers.hpp"
#include "format/encodings/runend.hpp"
#include "format/expr_eval.hpp"
#include "format/scalar.hpp"

namespace oc::format {
namespace {

using encodings::decode_unsigned_child;
using encodings::integer_ptype;
using encodings::unsigned_rows;

using Truths = std::vector<uint8_t>;
using MaybeTruths = std::optional<Truths>;

constexpr uint8_t kFalse = static_cast<uint8_t>(Truth::false_);
constexpr uint8_t kTrue = static_cast<uint8_t>(Truth::true_);
constexpr uint8_t kNull = static_cast<uint8_t>(Truth::null);

// The predicate on every row of @p values, a column of the predicate's column type: the values
// become the one field of a struct batch, the shape the predicate was bound against.
Result<Truths> truth_of_values(const BoundExpr& pred, const ColumnPtr& values) {
  auto batch = std::make_shared<Column>();
  batch->dtype = DType::make_struct({"value"}, {values->dtype}, false);
  batch->length = values->length;
  batch->children = {values};
  OC_ASSIGN_OR_RETURN(std::vector<Truth> truth, evaluate_truth(pred, *batch));
  Truths out(truth.size());
  std::transform(truth.begin(), truth.end(), out.begin(),
                 [](Truth v) { return static_cast<uint8_t>(v); });
  return out;
}

// The predicate on a null value of type @p t (NULL for comparisons, TRUE for IS NULL, ...).
Result<uint8_t> truth_of_null(const BoundExpr& pred, const DTypePtr& t) {
  OC_ASSIGN_OR_RETURN(ColumnPtr null_row, make_all_null(t, 1));
  OC_ASSIGN_OR_RETURN(Truths truth, truth_of_values(pred, null_row));
  return truth[0];
}

// Decodes @p node in full: dictionary values and run values live in their own row space, so any
// window the caller set does not apply.
Result<ColumnPtr> decode_whole(const ArrayView& node, const DTypePtr& t, uint64_t len,
                               DecodeContext& ctx) {
  return ctx.without_window([&] { return ctx.decode(node, t, len); });
}

// ---- vortex.dict -------------------------------------------------------------------------------
// metadata DictMetadata { values_len, codes_ptype, is_nullable_codes }, children [codes (len
// integers), values (values_len rows of t)]; row i is values[codes[i]], null where the code is
// null (format/encodings/dict.cpp). The predicate runs once per value; each window row takes its
// code's truth, and a null code the predicate's truth on NULL.
Result<MaybeTruths> eval_dict(const BoundExpr& pred, const ArrayView& node, const DTypePtr& t,
                              uint64_t len, RowWindow window, DecodeContext& ctx) {
  OC_ASSIGN_OR_RETURN(encodings::DictShape shape, encodings::parse_dict(node, t));
  const uint64_t values_len = shape.values_len;
  OC_TRY(ctx.check_alloc(window.size(), sizeof(uint64_t), "dict codes"));
  OC_ASSIGN_OR_RETURN(ColumnPtr codes,
                      ctx.decode_slice(node.children[0], shape.codes_t, len, window));
  OC_ASSIGN_OR_RETURN(std::vector<uint64_t> indices, unsigned_rows(*codes, "dict codes"));
  // Decoding never reads an empty dictionary (only null codes can refer to it); neither do we.
  Truths per_value;
  if (values_len > 0) {
    OC_ASSIGN_OR_RETURN(ColumnPtr values, decode_whole(node.children[1], t, values_len, ctx));
    OC_ASSIGN_OR_RETURN(per_value, truth_of_values(pred, values));
  }
  uint8_t on_null = kNull;
  if (codes->null_count > 0) {
    OC_ASSIGN_OR_RETURN(on_null, truth_of_null(pred, t));
  }

  Truths out(indices.size());
  for (uint64_t i = 0; i < indices.size(); ++i) {
    if (!codes->is_valid(i)) {
      out[i] = on_null;
      continue;
    }
    OC_EXPECT(indices[i] < values_len, corrupt,
              "dict code {} at row {} is out of range for {} values", indices[i], window.begin + i,
              values_len);
    out[i] = per_value[indices[i]];
  }
  return MaybeTruths(std::move(out));
}

// ---- vortex.runend -----------------------------------------------------------------------------
// metadata RunEndMetadata { ends_ptype, num_runs, offset }, children [ends (num_runs unsigned,
// strictly ascending), values (num_runs rows of t)]; logical row i is physical row offset + i,
// which run k covers when ends[k-1] <= offset + i < ends[k] (format/encodings/runend.cpp). The
// predicate runs once per run value and is repeated over the run's rows of the window.
Result<MaybeTruths> eval_runend(const BoundExpr& pred, const ArrayView& node, const DTypePtr& t,
                                uint64_t len, RowWindow window, DecodeContext& ctx) {
  OC_ASSIGN_OR_RETURN(encodings::RunEnds re,
                      ctx.without_window([&] { return encodings::decode_run_ends(node, ctx); }));
  const std::vector<uint64_t>& ends = re.ends;
  const uint64_t runs = ends.size(), offset = re.offset;
  OC_ASSIGN_OR_RETURN(ColumnPtr values, decode_whole(node.children[1], t, runs, ctx));
  OC_ASSIGN_OR_RETURN(Truths per_run, truth_of_values(pred, values));
  // Like decoding, a zero-length array may keep runs from anywhere; otherwise the runs
  // (ascending, none before the offset) must cover every row, so the search below stays in
  // bounds and offset + row never overflows.
  if (len == 0) return MaybeTruths(Truths());
  OC_EXPECT(runs > 0 && ends.back() - offset >= len, corrupt,
            "{} runs from offset {} do not cover {} rows", runs, offset, len);

  OC_TRY(ctx.check_alloc(window.size(), "run-end truth values"));
  Truths out(window.size());
  // The window's first physical row lies in the first run that ends after it.
  auto k = static_cast<uint64_t>(std::upper_bound(ends.begin(), ends.end(), offset + window.begin) -
                                 ends.begin());
  for (uint64_t i = 0; i < out.size(); ++i) {
    while (ends[k] <= offset + window.begin + i) ++k;
    out[i] = per_run[k];
  }
  return MaybeTruths(std::move(out));
}

// ---- vortex.constant ---------------------------------------------------------------------------
// buffer 0 = one protobuf ScalarValue, every row's value (format/encodings/constant.cpp).
Result<MaybeTruths> eval_constant(const BoundExpr& pred, const ArrayView& node, const DTypePtr& t,
                                  uint64_t /*len*/, RowWindow window, DecodeContext& ctx) {
  OC_TRY(expect_shape(node, 1, 0, 0));
  OC_ASSIGN_OR_RETURN(Scalar s, parse_scalar(node.buffers[0].span()));
  OC_ASSIGN_OR_RETURN(ColumnPtr one, scalar_to_column(s, t, 1));
  OC_ASSIGN_OR_RETURN(Truths truth, truth_of_values(pred, one));
  OC_TRY(ctx.check_alloc(window.size(), "constant truth values"));
  return MaybeTruths(Truths(window.size(), truth[0]));
}

// ---- fastlanes.for -----------------------------------------------------------------------------
// metadata = the reference as a bare ScalarValue; child 0 = the encoded values x - reference,
// wrapping in the value width w, with the array's own dtype and validity
// (format/encodings/for.cpp). Adding the reference permutes the w-bit patterns, so the values of
// an interval [a, b] of the type are exactly the encoded values u in one cyclic interval of
// [0, 2^w): (u - (a - reference)) mod 2^w <= b - a. Each comparison becomes such a range test on
// the child's values, exact for every pattern (even ones a writer would not produce), and the
// reference is never added.

__extension__ typedef __int128 Wide;  // NOLINT(modernize-use-using): __extension__ needs typedef

// Encoded values u with (u - start) mod 2^w <= span; none when `empty`.
struct EncodedRange {
  bool empty = false;
  uint64_t start = 0, span = 0;
};

// The values of the column's type and the reference, in the terms the rewrite needs.
struct ForDomain {
  Wide lo = 0, hi = 0;           // the type's range
  uint64_t reference = 0;        // its w-bit pattern
  uint64_t mask = 0;             // 2^w - 1
  std::optional<TimeUnit> unit;  // set for temporal columns, whose literals are microseconds
};

// A literal as a position among the column's integers: equal to `floor` when `exact`, else
// strictly between `floor` and `floor + 1` (an instant finer than the column's unit).
struct Threshold {
  Wide floor = 0;
  bool exact = true;
};

// @return nullopt for a float literal, which converts the column to double (not exact).
std::optional<Threshold> threshold_of(const Literal& lit, const std::optional<TimeUnit>& unit) {
  if (unit) {
    // As cmp_temporal in expr_eval.cpp: stored values in `unit` against microseconds.
    if (*unit == TimeUnit::ns) return Threshold{Wide{lit.i} * 1000, true};
    int64_t per = 1;  // microseconds per unit
    if (*unit == TimeUnit::ms) per = 1'000;
    if (*unit == TimeUnit::s) per = 1'000'000;
    if (*unit == TimeUnit::days) per = 86'400'000'000;
    const int64_t rem = lit.i % per;
    const int64_t floor = lit.i / per - (rem < 0 ? 1 : 0);
    return Threshold{floor, rem == 0};
  }
  if (lit.kind == Literal::Kind::int64) return Threshold{lit.i, true};
  if (lit.kind == Literal::Kind::uint64) return Threshold{lit.u, true};
  return std::nullopt;
}

EncodedRange encode_compare(CmpOp op, Threshold th, const ForDomain& d) {
  const Wide f = th.floor;
  Wide a = d.lo, b = d.hi;  // the values for which `x op literal` holds, before clipping
  switch (op) {
    case CmpOp::eq:
      if (!th.exact) return {true};
      a = b = f;
      break;
    case CmpOp::ne:
      if (!th.exact || f < d.lo || f > d.hi) return {false, 0, d.mask};
      // Every pattern but f's: the 2^w - 1 patterns from f + 1 on, cyclically.
      return {false, static_cast<uint64_t>(f + 1 - d.reference) & d.mask, d.mask - 1};
    case CmpOp::lt:
      b = th.exact ? f - 1 : f;
      break;
    case CmpOp::le:
      b = f;
      break;
    case CmpOp::gt:
      a = f + 1;
      break;
    case CmpOp::ge:
      a = th.exact ? f : f + 1;
      break;
  }
  a = std::max(a, d.lo);
  b = std::min(b, d.hi);
  if (a > b) return {true};
  // Conversion of a negative Wide to uint64_t is modular, which is the mod 2^w wanted here.
  return {false, static_cast<uint64_t>(a - d.reference) & d.mask, static_cast<uint64_t>(b - a)};
}

// The bound tree with each comparison's range in the encoded domain.
struct ForNode {
  BoundNode::Kind kind = BoundNode::Kind::constant;
  Truth constant = Truth::null;
  bool negated = false;
  EncodedRange range;
  std::vector<ForNode> children;
};

// @return nullopt when some node has no encoded form (string forms, float literals).
std::optional<ForNode> compile_for(const BoundNode& n, const ForDomain& d) {
  ForNode out{n.kind, n.constant, n.negated, {}, {}};
  switch (n.kind) {
    case BoundNode::Kind::constant:
    case BoundNode::Kind::is_null:
      return out;
    case BoundNode::Kind::compare: {
      const std::optional<Threshold> th = threshold_of(n.literal, d.unit);
      if (!th) return std::nullopt;
      out.range = encode_compare(n.op, *th, d);
      return out;
    }
    case BoundNode::Kind::and_:
    case BoundNode::Kind::or_:
    case BoundNode::Kind::not_:
      for (const auto& child : n.children) {
        std::optional<ForNode> c = compile_for(child, d);
        if (!c) return std::nullopt;
        out.children.push_back(std::move(*c));
      }
      return out;
    case BoundNode::Kind::column_bool:
    case BoundNode::Kind::starts_with:
      break;
  }
  return std::nullopt;
}

// Runs a compiled tree over the encoded rows of @p c (U: the unsigned type of its width), with
// SQL's three-valued logic as in expr_eval.cpp.
template <class U>
class ForEvaluator {
 public:
  explicit ForEvaluator(const Column& c) : c_(c), u_(c.values<U>()) {}

  [[nodiscard]] Truths eval(const ForNode& node) const {
    const uint64_t n = c_.length;
    Truths out(n, kNull);
    switch (node.kind) {
      case BoundNode::Kind::constant:
        out.assign(n, static_cast<uint8_t>(node.constant));
        break;
      case BoundNode::Kind::is_null:
        for (uint64_t r = 0; r < n; ++r) out[r] = c_.is_valid(r) == node.negated ? kTrue : kFalse;
        break;
      case BoundNode::Kind::compare: {
        // One unsigned comparison in the values' own width per row, without a branch, so that
        // it vectorises; null rows keep kNull.
        const EncodedRange& range = node.range;
        const auto start = static_cast<U>(range.start);
        const auto span = static_cast<U>(range.span);  // at most 2^w - 1
        // Locals, not members: a byte stored through `o` may alias them as far as the compiler
        // knows, which would reload them after every row.
        uint8_t* o = out.data();
        const U* u = u_;
        if (range.empty) {
          for (uint64_t r = 0; r < n; ++r) o[r] = kFalse;
        } else {
          for (uint64_t r = 0; r < n; ++r)
            o[r] = static_cast<uint8_t>(static_cast<U>(u[r] - start) <= span);
        }
        if (c_.null_count > 0) {
          for (uint64_t r = 0; r < n; ++r) o[r] = c_.is_valid(r) ? o[r] : kNull;
        }
        break;
      }
      case BoundNode::Kind::not_:
        out = eval(node.children[0]);
        for (auto& v : out) v = v == kNull ? kNull : v ^ 1;
        break;
      case BoundNode::Kind::and_:
      case BoundNode::Kind::or_: {
        const bool is_and = node.kind == BoundNode::Kind::and_;
        out.assign(n, is_and ? kTrue : kFalse);  // the identity of each
        for (const auto& child : node.children) {
          const Truths v = eval(child);
          combine_truths(is_and, out.data(), v.data(), n);
        }
        break;
      }
      case BoundNode::Kind::column_bool:
      case BoundNode::Kind::starts_with:
        break;  // compile_for rejects them
    }
    return out;
  }

 private:
  const Column& c_;
  const U* u_;
};

Result<MaybeTruths> eval_for(const BoundExpr& pred, const ArrayView& node, const DTypePtr& t,
                             uint64_t len, RowWindow window, DecodeContext& ctx) {
  OC_TRY(expect_shape(node, 0, 1, 1));
  const DType& storage = t->storage();
  OC_EXPECT(storage.kind == TypeKind::primitive && !ptype_is_float(storage.ptype), corrupt,
            "fastlanes.for for {}", t->to_string());
  // The bound type decides how values compare, as in evaluate_truth, which also rejects a
  // bound type of another storage.
  const DType& bound = *pred.columns[0].type;
  OC_EXPECT(bound.storage().kind == TypeKind::primitive && bound.storage().ptype == storage.ptype,
            invalid, "column is {}, bound as {}", t->to_string(), bound.to_string());
  ForDomain d;
  if (bound.kind == TypeKind::extension) {
    auto temporal = temporal_of(bound);
    if (!temporal.ok()) return MaybeTruths();  // other extensions do not compare
    d.unit = temporal->unit;
  }
  OC_ASSIGN_OR_RETURN(Scalar reference, parse_scalar(node.metadata));
  OC_EXPECT(!reference.is_null(), corrupt, "fastlanes.for reference is null");
  OC_ASSIGN_OR_RETURN(d.reference, scalar_to_bits(reference, storage.ptype));
  const size_t width = ptype_width(storage.ptype);
  const unsigned bits = static_cast<unsigned>(width) * 8;
  d.mask = bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
  if (ptype_is_signed(storage.ptype)) {
    d.hi = Wide{d.mask >> 1};
    d.lo = -d.hi - 1;
  } else {
    d.hi = Wide{d.mask};
  }
  const std::optional<ForNode> plan = compile_for(pred.root, d);
  if (!plan) return MaybeTruths();

  OC_ASSIGN_OR_RETURN(ColumnPtr encoded, ctx.decode_slice(node.children[0], t, len, window));
  // An empty window may come back with no values at all (a bitpacked child unpacks no block).
  if (encoded->length == 0) return MaybeTruths(Truths());
  OC_EXPECT(!encoded->buffers.empty() &&
                encoded->buffers[0].size() >= (encoded->offset + encoded->length) * width,
            corrupt, "fastlanes.for child holds fewer than {} values",
            encoded->offset + encoded->length);
  switch (width) {
    case 1:
      return MaybeTruths(ForEvaluator<uint8_t>(*encoded).eval(*plan));
    case 2:
      return MaybeTruths(ForEvaluator<uint16_t>(*encoded).eval(*plan));
    case 4:
      return MaybeTruths(ForEvaluator<uint32_t>(*encoded).eval(*plan));
    default:
      return MaybeTruths(ForEvaluator<uint64_t>(*encoded).eval(*plan));
  }
}

// vortex.ext (dates, timestamps): its storage child holds the values, so the filter runs on the
// child's encoding with the extension's type, which says how literals compare
// (format/encodings/ext.cpp).
Result<MaybeTruths> eval_ext(const BoundExpr& pred, const ArrayView& node, const DTypePtr& t,
                             uint64_t len, RowWindow window, DecodeContext& ctx) {
  OC_TRY(expect_shape(node, 0, 1, 1));
  OC_EXPECT(t->kind == TypeKind::extension, corrupt, "vortex.ext for {}", t->to_string());
  return evaluate_compressed(pred, node.children[0], t, len, window, ctx);
}

using EvalFn = Result<MaybeTruths> (*)(const BoundExpr&, const ArrayView&, const DTypePtr&,
                                       uint64_t, RowWindow, DecodeContext&);

constexpr std::pair<std::string_view, EvalFn> kPaths[] = {
    {"vortex.dict", eval_dict},  {"vortex.runend", eval_runend}, {"vortex.constant", eval_constant},
    {"fastlanes.for", eval_for}, {"vortex.ext", eval_ext},
};

}  // namespace

Result<std::optional<std::vector<uint8_t>>> evaluate_compressed(const BoundExpr& pred,
                                                                const ArrayView& node,
                                                                const DTypePtr& t, uint64_t len,
                                                                RowWindow window,
                                                                DecodeContext& ctx) {
  OC_EXPECT(pred.columns.size() == 1, invalid,
            "a compressed evaluation reads one column, the filter reads {}", pred.columns.size());
  OC_EXPECT(window.begin <= window.end && window.end <= len, invalid,
            "row window [{}, {}) outside {} rows", window.begin, window.end, len);
  const auto* path = std::find_if(std::begin(kPaths), std::end(kPaths),
                                  [&](const auto& p) { return p.first == node.encoding; });
  if (path == std::end(kPaths)) return MaybeTruths();
  auto r = path->second(pred, node, t, len, window, ctx);
  if (!r.ok()) {
    return std::move(r.error()).with_context(
        fmt::format("evaluating a filter on {} as {}", node.encoding, t->to_string()));
  }
  return r;
}

}  // namespace oc::format
