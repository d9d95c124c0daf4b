// SPDX-License-Identifier: Apache-2.0
#include "format/expr_eval.hpp"

#include <algorithm>
#include <array>
#include <compare>
#include <cstring>
#include <limits>
#include <string_view>

#include "config/checked_size.hpp"
#include "format/string_views.hpp"

namespace oc::format {
namespace {

constexpr uint8_t kFalse = static_cast<uint8_t>(Truth::false_);
constexpr uint8_t kTrue = static_cast<uint8_t>(Truth::true_);
constexpr uint8_t kNull = static_cast<uint8_t>(Truth::null);

// A referenced field located in the batch: its logical row r is leaf's logical row base + r
// (struct children are indexed through their parents' offsets), and `valid` folds in the
// validity of every struct on the way down.
struct Located {
  const DType* type = nullptr;  ///< the bound type, which decides how values compare
  const Column* leaf = nullptr;
  uint64_t base = 0;
  std::vector<uint8_t> valid;
};

Result<Located> locate(const BoundColumn& bc, const Column& batch) {
  Located out;
  const uint64_t n = batch.length;
  out.valid.assign(n, 1);
  const Column* c = &batch;
  uint64_t base = 0;
  for (size_t level = 0;; ++level) {
    if (!c->validity.empty()) {
      for (uint64_t r = 0; r < n; ++r) out.valid[r] &= c->is_valid(base + r) ? 1 : 0;
    }
    if (level == bc.indices.size()) break;
    const uint32_t idx = bc.indices[level];
    OC_EXPECT(c->dtype && c->dtype->kind == TypeKind::struct_ && idx < c->children.size() &&
                  c->children[idx],
              invalid, "batch has no field {} for column {}", idx, path_to_string(bc.path));
    base += c->offset;
    c = c->children[idx].get();
    OC_EXPECT(c->length >= saturating_add(base, n), invalid, "field {} has {} rows, batch needs {}",
              path_to_string(bc.path), c->length, base + n);
  }
  const DType& want = bc.type->storage();
  OC_EXPECT(c->dtype && c->dtype->storage().kind == want.kind &&
                (want.kind != TypeKind::primitive || c->dtype->storage().ptype == want.ptype),
            invalid, "batch column {} is {}, bound as {}", path_to_string(bc.path),
            c->dtype ? c->dtype->to_string() : "untyped", bc.type->to_string());
  // Where values are read (types bind accepts in comparisons), the values buffer must cover
  // the rows; string offsets are checked per row as they are read. IS NULL reads no values.
  const uint64_t rows = saturating_add(c->offset, saturating_add(base, n));
  const bool bytes = want.kind == TypeKind::utf8 || want.kind == TypeKind::binary;
  uint64_t need = 0;
  if (want.kind == TypeKind::boolean)
    need = bitmap_bytes(rows);
  else if (bytes && c->string_views)
    need = saturating_mul(rows, kViewBytes);
  else if (bytes)
    need = saturating_mul(saturating_add(rows, 1), sizeof(int32_t));
  else if (want.kind == TypeKind::primitive)
    need = saturating_mul(rows, ptype_width(want.ptype));
  OC_EXPECT(need == 0 || (c->buffers.size() >= (bytes ? 2u : 1u) && c->buffers[0].size() >= need),
            corrupt, "batch column {} has buffers too short for {} rows", path_to_string(bc.path),
            rows);
  out.type = bc.type.get();
  out.leaf = c;
  out.base = base;
  return out;
}

bool holds(CmpOp op, std::partial_ordering o) {
  // partial_ordering::unordered (a NaN) makes every relation but != false: IEEE 754.
  switch (op) {
    case CmpOp::eq:
      return std::is_eq(o);
    case CmpOp::ne:
      return std::is_neq(o);
    case CmpOp::lt:
      return std::is_lt(o);
    case CmpOp::le:
      return std::is_lteq(o);
    case CmpOp::gt:
      return std::is_gt(o);
    case CmpOp::ge:
      return std::is_gteq(o);
  }
  return false;
}

std::partial_ordering cmp(int64_t v, const Literal& l) {
  switch (l.kind) {
    case Literal::Kind::int64:
      return v <=> l.i;
    case Literal::Kind::uint64:
      return v < 0 ? std::partial_ordering::less : static_cast<uint64_t>(v) <=> l.u;
    default:
      return static_cast<double>(v) <=> l.f;
  }
}
std::partial_ordering cmp(uint64_t v, const Literal& l) {
  switch (l.kind) {
    case Literal::Kind::int64:
      return l.i < 0 ? std::partial_ordering::greater : v <=> static_cast<uint64_t>(l.i);
    case Literal::Kind::uint64:
      return v <=> l.u;
    default:
      return static_cast<double>(v) <=> l.f;
  }
}
std::partial_ordering cmp(double v, const Literal& l) {
  switch (l.kind) {
    case Literal::Kind::int64:
      return v <=> static_cast<double>(l.i);
    case Literal::Kind::uint64:
      return v <=> static_cast<double>(l.u);
    default:
      return v <=> l.f;
  }
}

int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

// Stored value v in `unit` against an instant in microseconds, exactly and without overflow:
// the finer of the two is floor-divided into the coarser, and the remainder breaks a tie.
std::partial_ordering cmp_temporal(int64_t v, TimeUnit unit, int64_t us) {
  constexpr std::array<int64_t, 5> kPerUnit = {0, 1, 1'000, 1'000'000,
                                               86'400'000'000};  // us per unit
  if (unit == TimeUnit::ns) {
    const int64_t q = floor_div(v, 1000);
    if (q != us) return q <=> us;
    return v - q * 1000 == 0 ? std::partial_ordering::equivalent : std::partial_ordering::greater;
  }
  const int64_t k = kPerUnit[static_cast<size_t>(unit)];
  const int64_t q = floor_div(us, k);
  if (v != q) return v <=> q;
  return us - q * k == 0 ? std::partial_ordering::equivalent : std::partial_ordering::less;
}

template <class T, class Fn>
void for_values(const Located& at, uint64_t n, std::vector<uint8_t>& out, Fn&& fn) {
  // Raw pointers: through the vectors, every byte stored would make the compiler reload them.
  const T* v = at.leaf->values<T>() + at.base;
  const uint8_t* valid = at.valid.data();
  uint8_t* o = out.data();
  // valid ? hit : NULL, as arithmetic so that the loop has no branch and vectorises.
  static_assert(kFalse == 0 && kTrue == 1 && kNull == 2);
  for (uint64_t r = 0; r < n; ++r) {
    const uint8_t is_valid = valid[r] != 0;
    const uint8_t hit = fn(v[r]) ? 1 : 0;
    o[r] = static_cast<uint8_t>(2 - is_valid * (2 - hit));
  }
}

template <class Fn>
void for_numeric(const Located& at, uint64_t n, std::vector<uint8_t>& out, Fn&& fn) {
  switch (at.leaf->dtype->storage().ptype) {
    case PType::u8:
      return for_values<uint8_t>(at, n, out, [&](uint8_t x) { return fn(uint64_t{x}); });
    case PType::u16:
      return for_values<uint16_t>(at, n, out, [&](uint16_t x) { return fn(uint64_t{x}); });
    case PType::u32:
      return for_values<uint32_t>(at, n, out, [&](uint32_t x) { return fn(uint64_t{x}); });
    case PType::u64:
      return for_values<uint64_t>(at, n, out, fn);
    case PType::i8:
      return for_values<int8_t>(at, n, out, [&](int8_t x) { return fn(int64_t{x}); });
    case PType::i16:
      return for_values<int16_t>(at, n, out, [&](int16_t x) { return fn(int64_t{x}); });
    case PType::i32:
      return for_values<int32_t>(at, n, out, [&](int32_t x) { return fn(int64_t{x}); });
    case PType::i64:
      return for_values<int64_t>(at, n, out, fn);
    case PType::f32:
      return for_values<float>(at, n, out, [&](float x) { return fn(double{x}); });
    case PType::f64:
      return for_values<double>(at, n, out, fn);
    case PType::f16:
      return;  // rejected by bind
  }
}

// `v op t` on every row of an integer column of a type T narrower than 64 bits, compared in T:
// the loop then vectorises (the baseline x86-64 target has no 64-bit vector compare). A
// threshold outside T's range gives every valid row the same answer.
template <class T>
void compare_narrow(const Located& at, uint64_t n, std::vector<uint8_t>& out, CmpOp op, int64_t t) {
  static_assert(sizeof(T) < sizeof(int64_t));
  constexpr int64_t lo = std::numeric_limits<T>::min(), hi = std::numeric_limits<T>::max();
  auto all = [&](bool b) { for_values<T>(at, n, out, [b](T) { return b; }); };
  const T c = static_cast<T>(std::clamp(t, lo, hi));
  switch (op) {
    case CmpOp::lt:
      return t > hi    ? all(true)
             : t <= lo ? all(false)
                       : for_values<T>(at, n, out, [c](T v) { return v < c; });
    case CmpOp::le:
      return t >= hi  ? all(true)
             : t < lo ? all(false)
                      : for_values<T>(at, n, out, [c](T v) { return v <= c; });
    case CmpOp::gt:
      return t >= hi  ? all(false)
             : t < lo ? all(true)
                      : for_values<T>(at, n, out, [c](T v) { return v > c; });
    case CmpOp::ge:
      return t > hi    ? all(false)
             : t <= lo ? all(true)
                       : for_values<T>(at, n, out, [c](T v) { return v >= c; });
    case CmpOp::eq:
      return t < lo || t > hi ? all(false) : for_values<T>(at, n, out, [c](T v) { return v == c; });
    case CmpOp::ne:
      return t < lo || t > hi ? all(true) : for_values<T>(at, n, out, [c](T v) { return v != c; });
  }
}

// `compare_narrow` where the column's type is narrower than 64 bits. @return false otherwise.
bool compare_narrow(const Located& at, uint64_t n, std::vector<uint8_t>& out, CmpOp op, int64_t t) {
  switch (at.leaf->dtype->storage().ptype) {
    case PType::u8:
      compare_narrow<uint8_t>(at, n, out, op, t);
      return true;
    case PType::u16:
      compare_narrow<uint16_t>(at, n, out, op, t);
      return true;
    case PType::u32:
      compare_narrow<uint32_t>(at, n, out, op, t);
      return true;
    case PType::i8:
      compare_narrow<int8_t>(at, n, out, op, t);
      return true;
    case PType::i16:
      compare_narrow<int16_t>(at, n, out, op, t);
      return true;
    case PType::i32:
      compare_narrow<int32_t>(at, n, out, op, t);
      return true;
    default:
      return false;
  }
}

class Evaluator {
 public:
  Evaluator(const Column& batch, std::vector<Located> cols)
      : n_(batch.length), cols_(std::move(cols)) {}

  Result<std::vector<uint8_t>> eval(const BoundNode& node) {
    // Leaves fill a vector of their own; NOT, AND and OR work in their first child's.
    std::vector<uint8_t> out;
    const bool leaf =
        node.kind == BoundNode::Kind::is_null || node.kind == BoundNode::Kind::column_bool ||
        node.kind == BoundNode::Kind::compare || node.kind == BoundNode::Kind::starts_with;
    if (leaf) out.assign(n_, kNull);
    switch (node.kind) {
      case BoundNode::Kind::constant:
        out.assign(n_, static_cast<uint8_t>(node.constant));
        break;
      case BoundNode::Kind::is_null: {
        const auto& valid = cols_[node.column].valid;
        for (uint64_t r = 0; r < n_; ++r) out[r] = (valid[r] != 0) == node.negated ? kTrue : kFalse;
        break;
      }
      case BoundNode::Kind::column_bool: {
        const Located& at = cols_[node.column];
        const uint64_t first = at.leaf->offset + at.base;
        for (uint64_t r = 0; r < n_; ++r) {
          out[r] = !at.valid[r]                                        ? kNull
                   : bitmap_get(at.leaf->buffers[0].data(), first + r) ? kTrue
                                                                       : kFalse;
        }
        break;
      }
      case BoundNode::Kind::compare:
      case BoundNode::Kind::starts_with:
        OC_TRY(compare(node, out));
        break;
      case BoundNode::Kind::not_: {
        OC_ASSIGN_OR_RETURN(out, eval(node.children[0]));
        for (auto& t : out) t = t == kNull ? kNull : t ^ 1;
        break;
      }
      case BoundNode::Kind::and_:
      case BoundNode::Kind::or_: {
        OC_ASSIGN_OR_RETURN(out, eval(node.children[0]));
        for (size_t c = 1; c < node.children.size(); ++c) {
          OC_ASSIGN_OR_RETURN(auto v, eval(node.children[c]));
          combine_truths(node.kind == BoundNode::Kind::and_, out.data(), v.data(), n_);
        }
        break;
      }
    }
    return out;
  }

 private:
  Result<void> compare(const BoundNode& node, std::vector<uint8_t>& out) {
    const Located& at = cols_[node.column];
    const DType& t = *at.type;
    const Literal& lit = node.literal;
    switch (t.storage().kind) {
      case TypeKind::boolean: {
        const uint64_t first = at.leaf->offset + at.base;
        for (uint64_t r = 0; r < n_; ++r) {
          const bool v = bitmap_get(at.leaf->buffers[0].data(), first + r);
          out[r] = !at.valid[r] ? kNull : holds(node.op, v <=> lit.b) ? kTrue : kFalse;
        }
        return {};
      }
      case TypeKind::utf8:
      case TypeKind::binary:
        return compare_bytes(node, at, out);
      default:
        break;
    }
    if (t.kind == TypeKind::extension) {
      OC_ASSIGN_OR_RETURN(Temporal tm, temporal_of(t));
      if (tm.unit != TimeUnit::ns) {
        compare_temporal_coarse(node.op, at, tm.unit, lit.i, out);
        return {};
      }
      for_numeric(at, n_, out, [&](auto v) {
        return holds(node.op, cmp_temporal(static_cast<int64_t>(v), tm.unit, lit.i));
      });
      return {};
    }
    // The operator is chosen once, outside the row loop.
    switch (node.op) {
      case CmpOp::eq:
        for_numeric(at, n_, out, [&](auto v) { return std::is_eq(cmp(v, lit)); });
        break;
      case CmpOp::ne:
        for_numeric(at, n_, out, [&](auto v) { return std::is_neq(cmp(v, lit)); });
        break;
      case CmpOp::lt:
        for_numeric(at, n_, out, [&](auto v) { return std::is_lt(cmp(v, lit)); });
        break;
      case CmpOp::le:
        for_numeric(at, n_, out, [&](auto v) { return std::is_lteq(cmp(v, lit)); });
        break;
      case CmpOp::gt:
        for_numeric(at, n_, out, [&](auto v) { return std::is_gt(cmp(v, lit)); });
        break;
      case CmpOp::ge:
        for_numeric(at, n_, out, [&](auto v) { return std::is_gteq(cmp(v, lit)); });
        break;
    }
    return {};
  }

  // A column in seconds, milliseconds, microseconds or days against an instant in
  // microseconds: the instant is x = q + r/k column units (k µs per unit, 0 <= r < k), so each
  // relation becomes one integer comparison with q or q + 1, as exact as cmp_temporal.
  void compare_temporal_coarse(CmpOp op, const Located& at, TimeUnit unit, int64_t us,
                               std::vector<uint8_t>& out) const {
    constexpr std::array<int64_t, 5> kPerUnit = {0, 1, 1'000, 1'000'000, 86'400'000'000};
    const int64_t k = kPerUnit[static_cast<size_t>(unit)];
    const int64_t q = floor_div(us, k);
    const bool exact = us - q * k == 0;
    const int64_t up = exact ? q : q + 1;  // the least integer >= x
    // The relation as one comparison with a threshold, in the column's own type where it is
    // narrower than 64 bits (dates are i32 days).
    const bool narrow = [&] {
      switch (op) {
        case CmpOp::lt:
          return compare_narrow(at, n_, out, CmpOp::lt, up);
        case CmpOp::le:
          return compare_narrow(at, n_, out, CmpOp::le, q);
        case CmpOp::gt:
          return compare_narrow(at, n_, out, CmpOp::gt, q);
        case CmpOp::ge:
          return compare_narrow(at, n_, out, CmpOp::ge, up);
        // An instant between two units equals no value: compared against a threshold no
        // value reaches (below every T), eq is false and ne true for every valid row.
        case CmpOp::eq:
          return compare_narrow(at, n_, out, CmpOp::eq,
                                exact ? q : std::numeric_limits<int64_t>::min());
        case CmpOp::ne:
          return compare_narrow(at, n_, out, CmpOp::ne,
                                exact ? q : std::numeric_limits<int64_t>::min());
      }
      return false;
    }();
    if (narrow) return;
    auto as_i64 = [](auto v) { return static_cast<int64_t>(v); };
    switch (op) {
      case CmpOp::lt:
        for_numeric(at, n_, out, [&](auto v) { return as_i64(v) < up; });
        break;
      case CmpOp::le:
        for_numeric(at, n_, out, [&](auto v) { return as_i64(v) <= q; });
        break;
      case CmpOp::gt:
        for_numeric(at, n_, out, [&](auto v) { return as_i64(v) > q; });
        break;
      case CmpOp::ge:
        for_numeric(at, n_, out, [&](auto v) { return as_i64(v) >= up; });
        break;
      case CmpOp::eq:
        for_numeric(at, n_, out, [&](auto v) { return exact && as_i64(v) == q; });
        break;
      case CmpOp::ne:
        for_numeric(at, n_, out, [&](auto v) { return !exact || as_i64(v) != q; });
        break;
    }
  }

  Result<void> compare_bytes(const BoundNode& node, const Located& at, std::vector<uint8_t>& out) {
    const Column& c = *at.leaf;
    const std::string_view lit = node.literal.s;
    // string_view compares as unsigned char (char_traits<char>::compare is memcmp-like).
    auto truth = [&](std::string_view v) {
      const bool hit = node.kind == BoundNode::Kind::starts_with
                           ? v.starts_with(lit)
                           : holds(node.op, v.compare(lit) <=> 0);
      return hit ? kTrue : kFalse;
    };
    if (c.string_views) {
      const uint64_t first = c.offset + at.base;
      const uint64_t data_buffers = c.buffers.size() - 2;
      for (uint64_t r = 0; r < n_; ++r) {
        if (!at.valid[r]) continue;  // already kNull
        const uint8_t* v = c.buffers[0].data() + (first + r) * kViewBytes;
        const uint32_t size = load_le<uint32_t>(v);
        if (size > kMaxInlined) {
          const uint32_t buffer = load_le<uint32_t>(v + 8), offset = load_le<uint32_t>(v + 12);
          OC_EXPECT(
              buffer < data_buffers && range_within(offset, size, c.buffers[1 + buffer].size()),
              corrupt, "string view [{}, +{}) of data buffer {} outside the column", offset, size,
              buffer);
        }
        out[r] = truth(string_at(c, first - c.offset + r));
      }
      return {};
    }
    const int32_t* offs = c.offsets() + at.base;
    const Buffer& data = c.buffers[1];
    for (uint64_t r = 0; r < n_; ++r) {
      if (!at.valid[r]) continue;  // already kNull
      const int32_t b = offs[r], e = offs[r + 1];
      OC_EXPECT(b >= 0 && b <= e && static_cast<uint64_t>(e) <= data.size(), corrupt,
                "string offsets [{}, {}) outside {} bytes", b, e, data.size());
      out[r] = truth({reinterpret_cast<const char*>(data.data()) + b, static_cast<size_t>(e - b)});
    }
    return {};
  }

  uint64_t n_;
  std::vector<Located> cols_;
};

}  // namespace

Result<std::vector<Truth>> evaluate_truth(const BoundExpr& e, const Column& batch) {
  std::vector<Located> cols;
  for (const auto& bc : e.columns) {
    OC_ASSIGN_OR_RETURN(auto at, locate(bc, batch));
    cols.push_back(std::move(at));
  }
  OC_ASSIGN_OR_RETURN(auto raw, Evaluator(batch, std::move(cols)).eval(e.root));
  std::vector<Truth> out(raw.size());
  for (size_t r = 0; r < raw.size(); ++r) out[r] = static_cast<Truth>(raw[r]);
  return out;
}

Result<Mask> evaluate(const BoundExpr& e, const Column& batch) {
  OC_ASSIGN_OR_RETURN(auto truth, evaluate_truth(e, batch));
  Mask m;
  m.keep.resize(truth.size());
  uint8_t* keep = m.keep.data();
  uint64_t count = 0;
  for (size_t r = 0; r < truth.size(); ++r) {
    keep[r] = truth[r] == Truth::true_;
    count += keep[r];
  }
  m.count = count;
  return m;
}

void combine_truths(bool is_and, uint8_t* into, const uint8_t* other, uint64_t n) noexcept {
  // Kleene logic is min (AND) and max (OR) over the order FALSE < NULL < TRUE. A Truth byte
  // (FALSE 0, TRUE 1, NULL 2) maps to its rank in that order by swapping its two low bits
  // (0 -> 0, 1 -> 2, 2 -> 1), a map that is its own inverse: branch-free and vectorisable,
  // where a table indexed by both truths is a gather per row.
  static_assert(kFalse == 0 && kTrue == 1 && kNull == 2);
  auto rank = [](uint8_t t) { return static_cast<uint8_t>(((t & 1) << 1) | (t >> 1)); };
  if (is_and) {
    for (uint64_t r = 0; r < n; ++r) into[r] = rank(std::min(rank(into[r]), rank(other[r])));
  } else {
    for (uint64_t r = 0; r < n; ++r) into[r] = rank(std::max(rank(into[r]), rank(other[r])));
  }
}

Result<ColumnPtr> filter_rows(const ColumnPtr& c, const Mask& mask) {
  OC_EXPECT(mask.keep.size() == c->length, invalid, "mask of {} rows for a column of {}",
            mask.keep.size(), c->length);
  return take(c, kept_rows(mask));
}

std::vector<uint64_t> kept_rows(const Mask& mask, uint64_t base) {
  // Without a branch per row: every row's index is written at the next free slot, which only a
  // kept row advances past (one slot more than the kept rows, dropped at the end). Eight rows
  // none of which is kept (one zero word) are skipped at once: a selective filter keeps few. The
  // count is recomputed from the bytes rather than trusted from mask.count.
  const uint8_t* keep = mask.keep.data();
  const uint64_t n = mask.keep.size();
  uint64_t kept = 0;
  for (uint64_t r = 0; r < n; ++r) kept += keep[r] != 0;
  std::vector<uint64_t> rows(kept + 1);
  uint64_t* out = rows.data();
  uint64_t at = 0;
  uint64_t r = 0;
  for (; r + 8 <= n; r += 8) {
    uint64_t word;
    std::memcpy(&word, keep + r, 8);
    if (word == 0) continue;
    for (uint64_t k = r; k < r + 8; ++k) {
      out[at] = base + k;
      at += keep[k] != 0;
    }
  }
  for (; r < n; ++r) {
    out[at] = base + r;
    at += keep[r] != 0;
  }
  rows.pop_back();
  return rows;
}

}  // namespace oc::format
