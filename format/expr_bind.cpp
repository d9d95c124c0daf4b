// SPDX-License-Identifier: Apache-2.0
#include "format/expr_bind.hpp"

#include <fmt/ranges.h>

#include <array>
#include <cstddef>

#include "format/expr_parser.hpp"

namespace oc::format {
namespace {

constexpr int64_t kMicrosPerDay = 86'400'000'000;

// What a column's values compare as.
enum class Domain : uint8_t { boolean, numeric, bytes, temporal, none };

Domain domain_of(const DType& t) {
  switch (t.kind) {
    case TypeKind::boolean:
      return Domain::boolean;
    case TypeKind::primitive:
      return t.ptype == PType::f16 ? Domain::none : Domain::numeric;
    case TypeKind::utf8:
    case TypeKind::binary:
      return Domain::bytes;
    case TypeKind::extension: {
      auto tm = temporal_of(t);
      const bool ok = tm.ok() && tm->kind != Temporal::Kind::time &&
                      t.storage().kind == TypeKind::primitive && !ptype_is_float(t.storage().ptype);
      return ok ? Domain::temporal : Domain::none;
    }
    default:
      return Domain::none;
  }
}

bool literal_fits(Domain d, Literal::Kind k) {
  using K = Literal::Kind;
  switch (d) {
    case Domain::boolean:
      return k == K::boolean;
    case Domain::numeric:
      return k == K::int64 || k == K::uint64 || k == K::float64;
    case Domain::bytes:
      return k == K::string;
    case Domain::temporal:
      return k == K::date || k == K::timestamp;
    case Domain::none:
      return false;
  }
  return false;
}

std::string_view literal_kind_name(Literal::Kind k) {
  constexpr std::array<std::string_view, 8> kNames = {"NULL",  "boolean", "integer", "integer",
                                                      "float", "string",  "DATE",    "TIMESTAMP"};
  return kNames[static_cast<size_t>(k)];
}

// `lit op col` holds exactly when `col flip(op) lit` does.
CmpOp flip(CmpOp op) {
  switch (op) {
    case CmpOp::lt:
      return CmpOp::gt;
    case CmpOp::le:
      return CmpOp::ge;
    case CmpOp::gt:
      return CmpOp::lt;
    case CmpOp::ge:
      return CmpOp::le;
    default:
      return op;
  }
}

BoundNode constant(Truth t) {
  BoundNode n;
  n.constant = t;
  return n;
}

BoundNode logical(BoundNode::Kind kind, std::vector<BoundNode> children) {
  BoundNode n;
  n.kind = kind;
  n.children = std::move(children);
  return n;
}

class Binder {
 public:
  Binder(const DType& schema, std::string_view source) : schema_(schema), source_(source) {}

  std::vector<BoundColumn> take_columns() { return std::move(columns_); }

  Result<BoundNode> bind(const Expr& e) {
    switch (e.kind) {
      case ExprKind::literal:
        if (e.literal.kind == Literal::Kind::null) return constant(Truth::null);
        if (e.literal.kind == Literal::Kind::boolean) {
          return constant(e.literal.b ? Truth::true_ : Truth::false_);
        }
        return error(
            Errc::invalid, e,
            fmt::format("a {} literal is not a condition", literal_kind_name(e.literal.kind)));
      case ExprKind::column: {
        OC_ASSIGN_OR_RETURN(uint32_t c, column(e));
        if (domain_of(*columns_[c].type) != Domain::boolean) {
          return error(Errc::invalid, e,
                       fmt::format("column {} ({}) is not a boolean condition",
                                   path_to_string(e.path), columns_[c].type->to_string()));
        }
        BoundNode n;
        n.kind = BoundNode::Kind::column_bool;
        n.column = c;
        return n;
      }
      case ExprKind::compare:
        return compare(e.op, *e.children[0], *e.children[1], e);
      case ExprKind::and_:
      case ExprKind::or_:
      case ExprKind::not_: {
        std::vector<BoundNode> kids;
        for (const auto& c : e.children) {
          OC_ASSIGN_OR_RETURN(auto k, bind(*c));
          kids.push_back(std::move(k));
        }
        const auto kind = e.kind == ExprKind::and_  ? BoundNode::Kind::and_
                          : e.kind == ExprKind::or_ ? BoundNode::Kind::or_
                                                    : BoundNode::Kind::not_;
        return logical(kind, std::move(kids));
      }
      case ExprKind::is_null: {
        const Expr& x = *e.children[0];
        if (x.kind == ExprKind::literal) {
          return constant((x.literal.kind == Literal::Kind::null) != e.negated ? Truth::true_
                                                                               : Truth::false_);
        }
        OC_ASSIGN_OR_RETURN(uint32_t c, column(x));
        BoundNode n;
        n.kind = BoundNode::Kind::is_null;
        n.column = c;
        n.negated = e.negated;
        return n;
      }
      case ExprKind::in_list: {
        std::vector<BoundNode> kids;
        for (size_t i = 1; i < e.children.size(); ++i) {
          OC_ASSIGN_OR_RETURN(auto k, compare(CmpOp::eq, *e.children[0], *e.children[i], e));
          kids.push_back(std::move(k));
        }
        return kids.size() == 1 ? std::move(kids[0])
                                : logical(BoundNode::Kind::or_, std::move(kids));
      }
      case ExprKind::between: {
        OC_ASSIGN_OR_RETURN(auto lo, compare(CmpOp::ge, *e.children[0], *e.children[1], e));
        OC_ASSIGN_OR_RETURN(auto hi, compare(CmpOp::le, *e.children[0], *e.children[2], e));
        return logical(BoundNode::Kind::and_, {std::move(lo), std::move(hi)});
      }
      case ExprKind::like:
        return like(e);
    }
    return error(Errc::invalid, e, "unknown expression node");
  }

 private:
  [[nodiscard]] Error error(Errc code, const Expr& at, std::string msg) const {
    const std::string where =
        source_.empty() ? fmt::format(" at column {}", at.pos + 1) : point_at(source_, at.pos);
    return OC_ERROR(code, "{}{}", msg, where);
  }

  // Resolves a column path through the struct fields; returns its index in columns_.
  Result<uint32_t> column(const Expr& e) {
    if (e.kind != ExprKind::column) {
      return error(Errc::unsupported, e, "expected a column name here");
    }
    for (uint32_t i = 0; i < columns_.size(); ++i) {
      if (columns_[i].path == e.path) return i;
    }
    BoundColumn bc;
    const DType* t = &schema_;
    for (size_t level = 0; level < e.path.size(); ++level) {
      const std::vector<std::string> prefix(e.path.begin(),
                                            e.path.begin() + static_cast<std::ptrdiff_t>(level));
      const std::string parent = level == 0 ? std::string("the schema") : path_to_string(prefix);
      if (t->kind != TypeKind::struct_) {
        return error(Errc::invalid, e,
                     fmt::format("{} is {}, not a struct", parent, t->to_string()));
      }
      uint32_t idx = 0;
      while (idx < t->names.size() && t->names[idx] != e.path[level]) ++idx;
      if (idx == t->names.size()) {
        std::vector<std::string> names;
        for (const auto& n : t->names) names.push_back(path_to_string({n}));
        return error(
            Errc::not_found, e,
            fmt::format("unknown column {}: {} has {}", path_to_string(e.path), parent,
                        names.empty() ? std::string("no fields")
                                      : "fields " + fmt::format("{}", fmt::join(names, ", "))));
      }
      bc.indices.push_back(idx);
      bc.type = t->children[idx];
      t = bc.type.get();
    }
    bc.path = e.path;
    columns_.push_back(std::move(bc));
    return static_cast<uint32_t>(columns_.size() - 1);
  }

  Result<BoundNode> compare(CmpOp op, const Expr& l, const Expr& r, const Expr& at) {
    const bool col_left = l.kind == ExprKind::column;
    const Expr& col = col_left ? l : r;
    const Expr& lit = col_left ? r : l;
    if (col.kind != ExprKind::column || lit.kind != ExprKind::literal) {
      return error(Errc::unsupported, at,
                   "a comparison needs a column on one side and a literal on the other");
    }
    OC_ASSIGN_OR_RETURN(uint32_t c, column(col));
    if (lit.literal.kind == Literal::Kind::null) return constant(Truth::null);
    const DType& t = *columns_[c].type;
    const Domain d = domain_of(t);
    if (d == Domain::none) {
      return error(Errc::unsupported, col,
                   fmt::format("cannot filter on column {} of type {}", path_to_string(col.path),
                               t.to_string()));
    }
    Literal value = lit.literal;
    if (d == Domain::temporal && value.kind == Literal::Kind::string) {
      // `ship BETWEEN '1994-01-01' AND '1994-12-31'`: the text is read as a date or timestamp.
      auto coerced = temporal_from_text(value.s);
      if (!coerced) {
        return error(
            Errc::invalid, lit,
            fmt::format("cannot read {} as a {} for column {}: expected 'YYYY-MM-DD' or "
                        "'YYYY-MM-DD HH:MM:SS[.ffffff]'",
                        literal_to_string(value), t.to_string(), path_to_string(col.path)));
      }
      value = *coerced;
    }
    if (!literal_fits(d, value.kind)) {
      return error(
          Errc::invalid, lit,
          fmt::format("cannot compare column {} ({}) with {} literal {}", path_to_string(col.path),
                      t.to_string(), literal_kind_name(lit.literal.kind),
                      literal_to_string(lit.literal)));
    }
    BoundNode n;
    n.kind = BoundNode::Kind::compare;
    n.column = c;
    n.op = col_left ? op : flip(op);
    n.literal = value;
    // Temporal literals all become microseconds; evaluation scales to the column's unit exactly.
    if (value.kind == Literal::Kind::date) n.literal = Literal::timestamp(value.i * kMicrosPerDay);
    return n;
  }

  Result<BoundNode> like(const Expr& e) {
    const Expr& pattern = *e.children[1];
    OC_ASSIGN_OR_RETURN(BoundNode n, compare(CmpOp::eq, *e.children[0], pattern, e));
    if (n.kind == BoundNode::Kind::compare && !n.literal.s.empty() && n.literal.s.back() == '%') {
      n.kind = BoundNode::Kind::starts_with;
      n.literal.s.pop_back();
    }
    return n;
  }

  const DType& schema_;
  std::string_view source_;
  std::vector<BoundColumn> columns_;
};

}  // namespace

Result<BoundExpr> bind(const Expr& e, const DType& schema, std::string_view source) {
  Binder b(schema, source);
  OC_ASSIGN_OR_RETURN(BoundNode root, b.bind(e));
  BoundExpr out;
  out.root = std::move(root);
  out.columns = b.take_columns();
  return out;
}

}  // namespace oc::format
