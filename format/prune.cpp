// SPDX-License-Identifier: Apache-2.0
#include "format/prune.hpp"

#include <algorithm>
#include <string_view>

#include "format/expr_eval.hpp"
#include "format/scalar.hpp"
#include "format/string_views.hpp"

namespace oc::format {
namespace {

constexpr int64_t kUnknown = -1;

bool is_bytes(const DType& t) {
  return t.storage().kind == TypeKind::utf8 || t.storage().kind == TypeKind::binary;
}

// The smallest byte string greater than every string that starts with @p s; nullopt when none
// exists (s is empty or all 0xFF).
std::optional<std::string> successor(std::string_view s) {
  std::string out(s);
  while (!out.empty() && static_cast<uint8_t>(out.back()) == 0xFF) out.pop_back();
  if (out.empty()) return std::nullopt;
  out.back() = static_cast<char>(static_cast<uint8_t>(out.back()) + 1);
  return out;
}

// A string max that may have been truncated to a prefix becomes an upper bound: its successor.
Result<ColumnPtr> string_upper_bounds(const ColumnPtr& zone_max) {
  OC_ASSIGN_OR_RETURN(ColumnPtr max, string_offsets(zone_max));
  const uint64_t n = max->length;
  std::vector<std::string> values(n);
  Buffer valid = make_bitmap(n, false);
  int64_t nulls = 0;
  const int32_t* offs = max->offsets();
  const Buffer& bytes = max->buffers[1];
  for (uint64_t i = 0; i < n; ++i) {
    std::optional<std::string> up;
    if (max->is_valid(i)) {
      OC_EXPECT(offs[i] >= 0 && offs[i] <= offs[i + 1] &&
                    static_cast<uint64_t>(offs[i + 1]) <= bytes.size(),
                corrupt, "zone max offsets [{}, {}) outside {} bytes", offs[i], offs[i + 1],
                bytes.size());
      up = successor({reinterpret_cast<const char*>(bytes.data()) + offs[i],
                      static_cast<size_t>(offs[i + 1] - offs[i])});
    }
    if (up) {
      values[i] = std::move(*up);
      bitmap_set(valid.mutable_data(), i, true);
    } else {
      ++nulls;
    }
  }
  uint64_t total = 0;
  for (const auto& v : values) total += v.size();
  Buffer offsets = Buffer::allocate_array(n + 1, sizeof(int32_t));
  Buffer data = Buffer::allocate(total);
  auto* o = offsets.mutable_as<int32_t>();
  uint64_t at = 0;
  for (uint64_t i = 0; i < n; ++i) {
    o[i] = static_cast<int32_t>(at);
    std::copy(values[i].begin(), values[i].end(), data.mutable_data() + at);
    at += values[i].size();
  }
  o[n] = static_cast<int32_t>(at);
  auto out = std::make_shared<Column>();
  out->dtype = max->dtype;
  out->length = n;
  out->null_count = nulls;
  if (nulls) out->validity = std::move(valid);
  out->buffers = {std::move(offsets), std::move(data)};
  return ColumnPtr(std::move(out));
}

// The field of a zones table holding one of @p names; a {value, truncated} struct yields value.
ColumnPtr stat_field(const Column& table, std::initializer_list<std::string_view> names) {
  const auto& fields = table.dtype->names;
  for (size_t i = 0; i < fields.size(); ++i) {
    if (std::find(names.begin(), names.end(), fields[i]) == names.end()) continue;
    ColumnPtr c = slice(table.children[i], table.offset, table.length);
    if (c->dtype->kind == TypeKind::struct_ && !c->children.empty()) {
      // A null bounded struct leaves its value unset: keep the struct's nulls.
      ColumnPtr v = slice(c->children[0], c->offset, c->length);
      if (c->null_count == 0) return v;
      Buffer bits = make_bitmap(c->length, false);
      for (uint64_t r = 0; r < c->length; ++r) {
        if (c->is_valid(r) && v->is_valid(r)) bitmap_set(bits.mutable_data(), r, true);
      }
      return with_validity(v, std::move(bits), v->dtype->with_nullable(true));
    }
    return c;
  }
  return nullptr;
}

void append_counts(const ColumnPtr& c, uint64_t n, std::vector<int64_t>& out) {
  for (uint64_t i = 0; i < n; ++i) {
    out.push_back(c && c->is_valid(i) ? static_cast<int64_t>(unsigned_at(*c, i)) : kUnknown);
  }
}

// min or max retyped to the column's nullable type, so that zone maps of several layouts concat.
ColumnPtr as_type(ColumnPtr c, const DTypePtr& t) {
  if (!c || c->dtype == t) return c;
  auto out = std::make_shared<Column>(*c);
  out->dtype = t;
  return out;
}

// ---- evaluation over pieces ------------------------------------------------------------------

// Per piece: can the node be TRUE, FALSE, NULL on some row.
struct Outcomes {
  std::vector<uint8_t> t, f, n;
};

// The statistics of one column aligned to the pieces.
struct PieceStats {
  DTypePtr type;
  ColumnPtr min, max;
  std::vector<uint8_t> all_null, no_null, may_nan;
};

class Pruner {
 public:
  Pruner(std::vector<PieceStats> cols, size_t pieces) : cols_(std::move(cols)), n_(pieces) {}

  Result<Outcomes> eval(const BoundNode& node) {
    Outcomes o{std::vector<uint8_t>(n_, 1), std::vector<uint8_t>(n_, 1),
               std::vector<uint8_t>(n_, 1)};
    switch (node.kind) {
      case BoundNode::Kind::constant:
        std::fill(o.t.begin(), o.t.end(), node.constant == Truth::true_);
        std::fill(o.f.begin(), o.f.end(), node.constant == Truth::false_);
        std::fill(o.n.begin(), o.n.end(), node.constant == Truth::null);
        return o;
      case BoundNode::Kind::is_null: {
        const PieceStats& s = cols_[node.column];
        for (size_t i = 0; i < n_; ++i) {
          o.t[i] = !s.no_null[i];
          o.f[i] = !s.all_null[i];
          o.n[i] = 0;
        }
        if (node.negated) std::swap(o.t, o.f);
        return o;
      }
      case BoundNode::Kind::column_bool: {
        const PieceStats& s = cols_[node.column];
        OC_ASSIGN_OR_RETURN(o.t, holds(s.max, s.type, CmpOp::eq, Literal::boolean(true)));
        OC_ASSIGN_OR_RETURN(o.f, holds(s.min, s.type, CmpOp::eq, Literal::boolean(false)));
        finish_leaf(s, o);
        return o;
      }
      case BoundNode::Kind::starts_with: {
        // Strings starting with p are exactly those in [p, successor(p)).
        const PieceStats& s = cols_[node.column];
        OC_ASSIGN_OR_RETURN(o.t, holds(s.max, s.type, CmpOp::ge, node.literal));
        if (auto up = successor(node.literal.s)) {
          OC_ASSIGN_OR_RETURN(auto below, holds(s.min, s.type, CmpOp::lt, Literal::string(*up)));
          for (size_t i = 0; i < n_; ++i) o.t[i] &= below[i];
        }
        finish_leaf(s, o);
        return o;
      }
      case BoundNode::Kind::compare:
        OC_TRY(compare(node, o));
        return o;
      case BoundNode::Kind::not_: {
        OC_ASSIGN_OR_RETURN(o, eval(node.children[0]));
        std::swap(o.t, o.f);
        return o;
      }
      case BoundNode::Kind::and_:
      case BoundNode::Kind::or_: {
        const bool is_and = node.kind == BoundNode::Kind::and_;
        // AND can be TRUE only if every operand can; it can be FALSE if any can. OR dually.
        std::fill(o.t.begin(), o.t.end(), is_and);
        std::fill(o.f.begin(), o.f.end(), !is_and);
        std::fill(o.n.begin(), o.n.end(), 0);
        for (const auto& child : node.children) {
          OC_ASSIGN_OR_RETURN(auto c, eval(child));
          for (size_t i = 0; i < n_; ++i) {
            if (is_and) {
              o.t[i] &= c.t[i];
              o.f[i] |= c.f[i];
            } else {
              o.t[i] |= c.t[i];
              o.f[i] &= c.f[i];
            }
            o.n[i] |= c.n[i];
          }
        }
        return o;
      }
    }
    return o;
  }

 private:
  // Per piece: 0 where `bound op lit` is known FALSE, else 1 (a missing bound is unknown).
  Result<std::vector<uint8_t>> holds(const ColumnPtr& bound, const DTypePtr& type, CmpOp op,
                                     const Literal& lit) const {
    std::vector<uint8_t> out(n_, 1);
    if (!bound) return out;
    BoundExpr e;
    e.columns.push_back({{"bound"}, {0}, type});
    e.root.kind = BoundNode::Kind::compare;
    e.root.op = op;
    e.root.literal = lit;
    Column batch;
    batch.dtype = DType::make_struct({"bound"}, {bound->dtype}, false);
    batch.length = n_;
    batch.children.push_back(bound);
    OC_ASSIGN_OR_RETURN(auto truth, evaluate_truth(e, batch));
    for (size_t i = 0; i < n_; ++i) out[i] = truth[i] != Truth::false_;
    return out;
  }

  Result<void> compare(const BoundNode& node, Outcomes& o) const {
    const PieceStats& s = cols_[node.column];
    const Literal& lit = node.literal;
    // Every leaf outcome is one of these four tests of a bound against the literal.
    OC_ASSIGN_OR_RETURN(auto lo_lt, holds(s.min, s.type, CmpOp::lt, lit));
    OC_ASSIGN_OR_RETURN(auto lo_le, holds(s.min, s.type, CmpOp::le, lit));
    OC_ASSIGN_OR_RETURN(auto hi_gt, holds(s.max, s.type, CmpOp::gt, lit));
    OC_ASSIGN_OR_RETURN(auto hi_ge, holds(s.max, s.type, CmpOp::ge, lit));
    std::vector<uint8_t> inside(n_), differs(n_);
    for (size_t i = 0; i < n_; ++i) {
      inside[i] = lo_le[i] & hi_ge[i];   // lit within [min, max]: some value may equal it
      differs[i] = lo_lt[i] | hi_gt[i];  // some value may differ from lit
    }
    switch (node.op) {
      case CmpOp::lt:
        o.t = lo_lt, o.f = hi_ge;
        break;
      case CmpOp::le:
        o.t = lo_le, o.f = hi_gt;
        break;
      case CmpOp::gt:
        o.t = hi_gt, o.f = lo_le;
        break;
      case CmpOp::ge:
        o.t = hi_ge, o.f = lo_lt;
        break;
      case CmpOp::eq:
        o.t = inside, o.f = differs;
        break;
      case CmpOp::ne:
        o.t = differs, o.f = inside;
        break;
    }
    // NaN compares unequal to everything and orders with nothing.
    for (size_t i = 0; i < n_; ++i) {
      if (s.may_nan[i]) (node.op == CmpOp::ne ? o.t : o.f)[i] = 1;
    }
    finish_leaf(s, o);
    return {};
  }

  // A value leaf is NULL exactly on null rows, and neither TRUE nor FALSE in an all-null piece.
  void finish_leaf(const PieceStats& s, Outcomes& o) const {
    for (size_t i = 0; i < n_; ++i) {
      o.n[i] = !s.no_null[i];
      if (s.all_null[i]) o.t[i] = o.f[i] = 0;
    }
  }

  std::vector<PieceStats> cols_;
  size_t n_;
};

}  // namespace

Result<std::optional<ColumnZones>> column_zones(LayoutReader& reader) {
  std::vector<ZoneMapRef> refs;
  reader.collect_zone_readers(0, refs);
  const DTypePtr t = reader.dtype()->with_nullable(true);
  ColumnZones out;
  std::vector<ColumnPtr> mins, maxs;
  std::vector<int64_t> nulls, nans;
  uint64_t covered = 0;
  auto add_gap = [&](uint64_t upto) -> Result<void> {
    if (upto <= covered) return {};
    out.starts.push_back(covered);
    OC_ASSIGN_OR_RETURN(ColumnPtr none, make_all_null(t, 1));
    mins.push_back(none);
    maxs.push_back(none);
    nulls.push_back(kUnknown);
    nans.push_back(kUnknown);
    covered = upto;
    return {};
  };
  bool any = false;
  for (const auto& [first, z] : refs) {
    if (first < covered) continue;  // nested inside a zone map already taken
    auto table = z->zones();
    // An unreadable or inconsistent zones table only loses pruning: the data is still read.
    if (!table.ok() || table->zone_len == 0) continue;
    const uint64_t rows = z->row_count();
    const uint64_t count = (rows + table->zone_len - 1) / table->zone_len;
    const Column& tab = *table->table;
    if (tab.length != count) continue;
    OC_TRY(add_gap(first));
    ColumnPtr mn = stat_field(tab, {"min", "vortex.min", "vortex.bounded_min"});
    ColumnPtr mx = stat_field(tab, {"max", "vortex.max", "vortex.bounded_max"});
    if (mx && is_bytes(*t)) {
      OC_ASSIGN_OR_RETURN(mx, string_upper_bounds(mx));
    }
    if (!mn) {
      OC_ASSIGN_OR_RETURN(mn, make_all_null(t, count));
    }
    if (!mx) {
      OC_ASSIGN_OR_RETURN(mx, make_all_null(t, count));
    }
    mins.push_back(as_type(mn, t));
    maxs.push_back(as_type(mx, t));
    append_counts(stat_field(tab, {"null_count", "vortex.null_count"}), count, nulls);
    append_counts(stat_field(tab, {"nan_count", "vortex.nan_count"}), count, nans);
    for (uint64_t i = 0; i < count; ++i) out.starts.push_back(first + i * table->zone_len);
    covered = first + rows;
    any = true;
  }
  if (!any) return std::optional<ColumnZones>();
  OC_TRY(add_gap(reader.row_count()));
  out.starts.push_back(covered);
  OC_ASSIGN_OR_RETURN(out.min, concat(mins));
  OC_ASSIGN_OR_RETURN(out.max, concat(maxs));
  out.null_count = std::move(nulls);
  out.nan_count = std::move(nans);
  return std::optional<ColumnZones>(std::move(out));
}

Result<std::optional<ColumnZones>> file_zone(const ArrayStatsView& s, const DTypePtr& type,
                                             uint64_t rows) {
  const DTypePtr t = type->with_nullable(true);
  const bool bytes = is_bytes(*t);
  ColumnZones out;
  out.starts = {0, rows};
  out.null_count = {s.null_count ? static_cast<int64_t>(*s.null_count) : kUnknown};
  out.nan_count = {kUnknown};
  // An inexact string bound is a truncation, still a bound (see the file comment); other
  // inexact statistics are estimates and are not used.
  auto bound = [&](const std::vector<uint8_t>& bytes_of, bool exact) -> Result<ColumnPtr> {
    if (bytes_of.empty() || !(exact || bytes)) return make_all_null(t, 1);
    auto scalar = parse_scalar(bytes_of);
    if (!scalar.ok()) return make_all_null(t, 1);
    auto col = scalar_to_column(*scalar, t, 1);
    if (!col.ok()) return make_all_null(t, 1);
    return col;
  };
  OC_ASSIGN_OR_RETURN(out.min, bound(s.min, s.min_exact));
  OC_ASSIGN_OR_RETURN(out.max, bound(s.max, s.max_exact));
  if (bytes) {
    OC_ASSIGN_OR_RETURN(out.max, string_upper_bounds(out.max));
  }
  return std::optional<ColumnZones>(std::move(out));
}

Result<PrunePlan> prune(const BoundExpr& e, std::span<const std::optional<ColumnZones>> zones,
                        uint64_t begin, uint64_t end) {
  PrunePlan plan;
  if (begin >= end) return plan;
  std::vector<uint64_t> cuts = {begin, end};
  for (const auto& z : zones) {
    if (!z) continue;
    for (uint64_t s : z->starts) {
      if (s > begin && s < end) cuts.push_back(s);
    }
  }
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  const size_t pieces = cuts.size() - 1;
  std::vector<PieceStats> cols;
  for (size_t c = 0; c < e.columns.size(); ++c) {
    PieceStats ps;
    ps.type = e.columns[c].type;
    ps.all_null.assign(pieces, 0);
    ps.no_null.assign(pieces, 0);
    const bool is_float =
        ps.type->storage().kind == TypeKind::primitive && ptype_is_float(ps.type->storage().ptype);
    ps.may_nan.assign(pieces, is_float);
    const auto& z = zones[c];
    if (z) {
      std::vector<uint64_t> idx(pieces, 0);
      Buffer has = make_bitmap(pieces, false);
      for (size_t i = 0; i < pieces; ++i) {
        auto it = std::upper_bound(z->starts.begin(), z->starts.end(), cuts[i]);
        if (it == z->starts.begin() || it == z->starts.end()) continue;
        const size_t zi = static_cast<size_t>(it - z->starts.begin()) - 1;
        idx[i] = zi;
        bitmap_set(has.mutable_data(), i, true);
        const int64_t nc = z->null_count[zi];
        ps.all_null[i] = nc >= 0 && static_cast<uint64_t>(nc) == z->starts[zi + 1] - z->starts[zi];
        ps.no_null[i] = nc == 0;
        if (is_float) ps.may_nan[i] = z->nan_count[zi] != 0;
      }
      OC_ASSIGN_OR_RETURN(ps.min, take(z->min, idx, has.data()));
      OC_ASSIGN_OR_RETURN(ps.max, take(z->max, idx, has.data()));
    }
    cols.push_back(std::move(ps));
  }
  OC_ASSIGN_OR_RETURN(Outcomes o, Pruner(std::move(cols), pieces).eval(e.root));
  plan.zones_total = pieces;
  for (size_t i = 0; i < pieces; ++i) {
    if (!o.t[i]) {
      ++plan.zones_pruned;
      continue;
    }
    if (!plan.keep.empty() && plan.keep.back().end == cuts[i])
      plan.keep.back().end = cuts[i + 1];
    else
      plan.keep.push_back({cuts[i], cuts[i + 1]});
  }
  return plan;
}

}  // namespace oc::format
