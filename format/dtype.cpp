// SPDX-License-Identifier: Apache-2.0
#include "format/dtype.hpp"

#include "config/defaults.hpp"
#include "format/fbs/vortex_file_generated.h"
#include "format/flatbuffer_util.hpp"

namespace oc::format {

std::string_view ptype_name(PType p) noexcept {
  constexpr std::string_view kNames[] = {"u8",  "u16", "u32", "u64", "i8", "i16",
                                         "i32", "i64", "f16", "f32", "f64"};
  return kNames[static_cast<uint8_t>(p)];
}

Result<PType> ptype_from(uint64_t raw) {
  OC_EXPECT(raw <= static_cast<uint64_t>(PType::f64), corrupt, "invalid ptype {}", raw);
  return static_cast<PType>(raw);
}

namespace {
DTypePtr make(TypeKind k, bool nullable) {
  auto t = std::make_shared<DType>();
  t->kind = k;
  t->nullable = nullable;
  return t;
}
}  // namespace

DTypePtr DType::make_null() { return make(TypeKind::null, true); }
DTypePtr DType::make_bool(bool n) { return make(TypeKind::boolean, n); }
DTypePtr DType::make_utf8(bool n) { return make(TypeKind::utf8, n); }
DTypePtr DType::make_binary(bool n) { return make(TypeKind::binary, n); }
DTypePtr DType::make_primitive(PType p, bool n) {
  auto t = std::make_shared<DType>();
  t->kind = TypeKind::primitive;
  t->ptype = p;
  t->nullable = n;
  return t;
}
DTypePtr DType::make_struct(std::vector<std::string> names, std::vector<DTypePtr> fields, bool n) {
  auto t = std::make_shared<DType>();
  t->kind = TypeKind::struct_;
  t->names = std::move(names);
  t->children = std::move(fields);
  t->nullable = n;
  return t;
}

DTypePtr DType::with_nullable(bool n) const {
  auto t = std::make_shared<DType>(*this);
  if (kind == TypeKind::extension) {
    t->children[0] = children[0]->with_nullable(n);
  }
  if (kind != TypeKind::null) t->nullable = n;
  return t;
}

DTypePtr DType::field(std::string_view name) const {
  if (kind != TypeKind::struct_) return nullptr;
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return children[i];
  }
  return nullptr;
}

bool DType::operator==(const DType& o) const {
  if (kind != o.kind || nullable != o.nullable || ptype != o.ptype || precision != o.precision ||
      scale != o.scale || list_size != o.list_size || names != o.names || ext_id != o.ext_id ||
      ext_metadata != o.ext_metadata || children.size() != o.children.size()) {
    return false;
  }
  for (size_t i = 0; i < children.size(); ++i) {
    if (!(*children[i] == *o.children[i])) return false;
  }
  return true;
}

std::string DType::to_string() const {
  const char* q = nullable ? "?" : "";
  switch (kind) {
    case TypeKind::null:
      return "null";
    case TypeKind::boolean:
      return fmt::format("bool{}", q);
    case TypeKind::primitive:
      return fmt::format("{}{}", ptype_name(ptype), q);
    case TypeKind::decimal:
      return fmt::format("decimal({},{}){}", precision, scale, q);
    case TypeKind::utf8:
      return fmt::format("utf8{}", q);
    case TypeKind::binary:
      return fmt::format("binary{}", q);
    case TypeKind::variant:
      return fmt::format("variant{}", q);
    case TypeKind::union_:
      return fmt::format("union{}", q);
    case TypeKind::list:
      return fmt::format("list<{}>{}", children[0]->to_string(), q);
    case TypeKind::fixed_size_list:
      return fmt::format("fixed_list<{}>[{}]{}", children[0]->to_string(), list_size, q);
    case TypeKind::extension:
      return fmt::format("ext<{}, {}>", ext_id, children[0]->to_string());
    case TypeKind::struct_: {
      std::string s = "struct{";
      for (size_t i = 0; i < names.size(); ++i) {
        if (i) s += ", ";
        s += names[i] + "=" + children[i]->to_string();
      }
      return s + "}" + q;
    }
  }
  return "?";
}

Result<DTypePtr> dtype_from_flatbuffer(const fb::DType* node, uint32_t depth) {
  OC_EXPECT(node != nullptr, corrupt, "missing dtype");
  OC_EXPECT(depth < defaults().max_array_depth, corrupt, "dtype nested deeper than {}", depth);
  auto t = std::make_shared<DType>();
  using U = fb::TypeUnion;
  // FlatBuffers verification accepts a union tag whose table is missing; reject it here.
  OC_EXPECT(node->type_type() == U::NONE || node->type() != nullptr, corrupt,
            "dtype tag {} without its table", static_cast<int>(node->type_type()));
  switch (node->type_type()) {
    case U::NullType:
      t->kind = TypeKind::null;
      t->nullable = true;
      break;
    case U::BoolType:
      t->kind = TypeKind::boolean;
      t->nullable = node->type_as_BoolType()->nullable();
      break;
    case U::PrimitiveType: {
      const auto* p = node->type_as_PrimitiveType();
      t->kind = TypeKind::primitive;
      OC_ASSIGN_OR_RETURN(t->ptype, ptype_from(static_cast<uint8_t>(p->ptype())));
      t->nullable = p->nullable();
      break;
    }
    case U::DecimalType: {
      const auto* d = node->type_as_DecimalType();
      t->kind = TypeKind::decimal;
      t->precision = d->precision();
      t->scale = d->scale();
      t->nullable = d->nullable();
      OC_EXPECT(t->precision >= 1 && t->precision <= 76, corrupt, "decimal precision {}",
                t->precision);
      break;
    }
    case U::Utf8Type:
      t->kind = TypeKind::utf8;
      t->nullable = node->type_as_Utf8Type()->nullable();
      break;
    case U::BinaryType:
      t->kind = TypeKind::binary;
      t->nullable = node->type_as_BinaryType()->nullable();
      break;
    case U::StructType: {
      const auto* s = node->type_as_StructType();
      t->kind = TypeKind::struct_;
      t->nullable = s->nullable();
      const auto* names = s->names();
      const auto* dtypes = s->dtypes();
      const size_t n = names ? names->size() : 0;
      OC_EXPECT(n == (dtypes ? dtypes->size() : 0), corrupt, "struct has {} names but {} dtypes", n,
                dtypes ? dtypes->size() : 0);
      for (size_t i = 0; i < n; ++i) {
        t->names.emplace_back(names->Get(static_cast<flatbuffers::uoffset_t>(i))->str());
        OC_ASSIGN_OR_RETURN(
            auto child,
            dtype_from_flatbuffer(dtypes->Get(static_cast<flatbuffers::uoffset_t>(i)), depth + 1));
        t->children.push_back(std::move(child));
      }
      break;
    }
    case U::ListType: {
      const auto* l = node->type_as_ListType();
      t->kind = TypeKind::list;
      t->nullable = l->nullable();
      OC_ASSIGN_OR_RETURN(auto e, dtype_from_flatbuffer(l->element_type(), depth + 1));
      t->children.push_back(std::move(e));
      break;
    }
    case U::FixedSizeListType: {
      const auto* l = node->type_as_FixedSizeListType();
      t->kind = TypeKind::fixed_size_list;
      t->nullable = l->nullable();
      t->list_size = l->size();
      OC_ASSIGN_OR_RETURN(auto e, dtype_from_flatbuffer(l->element_type(), depth + 1));
      t->children.push_back(std::move(e));
      break;
    }
    case U::ExtensionType: {
      const auto* e = node->type_as_ExtensionType();
      t->kind = TypeKind::extension;
      OC_EXPECT(e->id() != nullptr, corrupt, "extension dtype without id");
      t->ext_id = e->id()->str();
      if (e->metadata()) t->ext_metadata.assign(e->metadata()->begin(), e->metadata()->end());
      OC_ASSIGN_OR_RETURN(auto storage, dtype_from_flatbuffer(e->storage_dtype(), depth + 1));
      t->nullable = storage->nullable;
      t->children.push_back(std::move(storage));
      break;
    }
    case U::VariantType:
      t->kind = TypeKind::variant;
      t->nullable = node->type_as_VariantType()->nullable();
      break;
    case U::UnionType:
      t->kind = TypeKind::union_;
      t->nullable = node->type_as_UnionType()->nullable();
      break;
    default:
      return OC_ERROR(Errc::corrupt, "unknown dtype tag {}", static_cast<int>(node->type_type()));
  }
  return DTypePtr(std::move(t));
}

Result<DTypePtr> parse_dtype(std::span<const uint8_t> bytes) {
  OC_ASSIGN_OR_RETURN(const fb::DType* root, verified_root<fb::DType>(bytes, "dtype"));
  return dtype_from_flatbuffer(root);
}

Result<Temporal> temporal_of(const DType& t) {
  OC_EXPECT(t.kind == TypeKind::extension, unsupported, "not an extension type");
  Temporal out{};
  if (t.ext_id == "vortex.date")
    out.kind = Temporal::Kind::date;
  else if (t.ext_id == "vortex.time")
    out.kind = Temporal::Kind::time;
  else if (t.ext_id == "vortex.timestamp")
    out.kind = Temporal::Kind::timestamp;
  else
    return OC_ERROR(Errc::unsupported, "unsupported extension type {}", t.ext_id);
  // Metadata: u8 TimeUnit; timestamps follow it with a u16 LE zone length and the zone bytes.
  const auto& m = t.ext_metadata;
  OC_EXPECT(!m.empty() && m[0] <= 4, corrupt, "{} metadata has no valid time unit", t.ext_id);
  out.unit = static_cast<TimeUnit>(m[0]);
  if (out.kind == Temporal::Kind::timestamp) {
    OC_EXPECT(m.size() >= 3, corrupt, "timestamp metadata is {} bytes, need >= 3", m.size());
    const size_t tz_len = static_cast<size_t>(m[1]) | (static_cast<size_t>(m[2]) << 8);
    OC_EXPECT(m.size() >= 3 + tz_len, corrupt, "timestamp zone length {} past metadata", tz_len);
    out.tz.assign(reinterpret_cast<const char*>(m.data()) + 3, tz_len);
  }
  return out;
}

}  // namespace oc::format
