// SPDX-License-Identifier: Apache-2.0
#include "format/scalar.hpp"

#include <array>
#include <cstring>

#include "config/checked_size.hpp"
#include "format/proto/scalar.pb.h"

namespace oc::format {
namespace {

Result<Scalar> from_proto(const pb::ScalarValue& v, int depth) {
  OC_EXPECT(depth < 64, corrupt, "scalar nested deeper than 64");
  Scalar s;
  using K = pb::ScalarValue::KindCase;
  switch (v.kind_case()) {
    case K::KIND_NOT_SET:
    case K::kNullValue:
      s.value = Scalar::Null{};
      break;
    case K::kBoolValue:
      s.value = v.bool_value();
      break;
    case K::kInt64Value:
      s.value = static_cast<int64_t>(v.int64_value());
      break;
    case K::kUint64Value:
      s.value = static_cast<uint64_t>(v.uint64_value());
      break;
    case K::kF32Value:
      s.value = v.f32_value();
      break;
    case K::kF64Value:
      s.value = v.f64_value();
      break;
    case K::kF16Value:
      OC_EXPECT(v.f16_value() <= 0xffff, corrupt, "f16 scalar bits {} exceed 16 bits",
                v.f16_value());
      s.value = Scalar::F16{static_cast<uint16_t>(v.f16_value())};
      break;
    case K::kStringValue:
      s.value = v.string_value();
      break;
    case K::kBytesValue:
      s.value = std::vector<uint8_t>(v.bytes_value().begin(), v.bytes_value().end());
      break;
    case K::kListValue: {
      std::vector<Scalar> items;
      for (const auto& e : v.list_value().values()) {
        OC_ASSIGN_OR_RETURN(auto item, from_proto(e, depth + 1));
        items.push_back(std::move(item));
      }
      s.value = std::move(items);
      break;
    }
    case K::kVariantValue:
      return OC_ERROR(Errc::unsupported, "variant scalars are not supported");
  }
  return s;
}

template <class T>
bool fits(int64_t v) {
  return v >= static_cast<int64_t>(std::numeric_limits<T>::min()) &&
         v <= static_cast<int64_t>(std::numeric_limits<T>::max());
}

}  // namespace

Result<Scalar> parse_scalar(std::span<const uint8_t> bytes) {
  pb::ScalarValue v;
  OC_EXPECT(v.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())), corrupt,
            "scalar value is not a valid protobuf message ({} bytes)", bytes.size());
  return from_proto(v, 0);
}

Result<uint64_t> scalar_to_bits(const Scalar& s, PType p) {
  const auto* i = std::get_if<int64_t>(&s.value);
  const auto* u = std::get_if<uint64_t>(&s.value);
  if (ptype_is_float(p)) {
    if (p == PType::f16) {
      if (const auto* h = std::get_if<Scalar::F16>(&s.value)) return uint64_t{h->bits};
    } else if (p == PType::f32) {
      float f;
      if (const auto* x = std::get_if<float>(&s.value))
        f = *x;
      else if (const auto* d = std::get_if<double>(&s.value))
        f = static_cast<float>(*d);
      else
        return OC_ERROR(Errc::corrupt, "expected an f32 scalar");
      uint32_t b;
      std::memcpy(&b, &f, 4);
      return uint64_t{b};
    } else {
      double d;
      if (const auto* x = std::get_if<double>(&s.value))
        d = *x;
      else if (const auto* f = std::get_if<float>(&s.value))
        d = *f;
      else
        return OC_ERROR(Errc::corrupt, "expected an f64 scalar");
      uint64_t b;
      std::memcpy(&b, &d, 8);
      return b;
    }
    return OC_ERROR(Errc::corrupt, "expected a float scalar for {}", ptype_name(p));
  }
  OC_EXPECT(i || u, corrupt, "expected an integer scalar for {}", ptype_name(p));
  // Both signs are accepted for either type as long as the value fits.
  const bool neg = i && *i < 0;
  const uint64_t mag = i ? static_cast<uint64_t>(*i) : *u;
  bool ok = false;
  switch (p) {
    case PType::u8:
      ok = !neg && mag <= UINT8_MAX;
      break;
    case PType::u16:
      ok = !neg && mag <= UINT16_MAX;
      break;
    case PType::u32:
      ok = !neg && mag <= UINT32_MAX;
      break;
    case PType::u64:
      ok = !neg;
      break;
    case PType::i8:
      ok = i ? fits<int8_t>(*i) : mag <= INT8_MAX;
      break;
    case PType::i16:
      ok = i ? fits<int16_t>(*i) : mag <= INT16_MAX;
      break;
    case PType::i32:
      ok = i ? fits<int32_t>(*i) : mag <= INT32_MAX;
      break;
    case PType::i64:
      ok = i ? true : mag <= INT64_MAX;
      break;
    default:
      break;
  }
  OC_EXPECT(ok, corrupt, "scalar {} does not fit {}", i ? std::to_string(*i) : std::to_string(mag),
            ptype_name(p));
  const size_t w = ptype_width(p);
  return w == 8 ? mag : (mag & ((uint64_t{1} << (8 * w)) - 1));
}

Result<std::array<uint8_t, 32>> scalar_to_decimal(const Scalar& s) {
  std::array<uint8_t, 32> out{};
  if (const auto* b = std::get_if<std::vector<uint8_t>>(&s.value)) {
    OC_EXPECT(!b->empty() && b->size() <= 32, corrupt, "decimal scalar of {} bytes", b->size());
    std::memcpy(out.data(), b->data(), b->size());
    const uint8_t fill = (b->back() & 0x80) ? 0xff : 0x00;
    std::memset(out.data() + b->size(), fill, 32 - b->size());
    return out;
  }
  int64_t v = 0;
  if (const auto* i = std::get_if<int64_t>(&s.value))
    v = *i;
  else if (const auto* u = std::get_if<uint64_t>(&s.value); u && *u <= INT64_MAX)
    v = static_cast<int64_t>(*u);
  else
    return OC_ERROR(Errc::corrupt, "expected a decimal scalar");
  std::memcpy(out.data(), &v, 8);
  std::memset(out.data() + 8, v < 0 ? 0xff : 0, 24);
  return out;
}

Result<ColumnPtr> scalar_to_column(const Scalar& s, const DTypePtr& t, uint64_t len) {
  if (s.is_null()) {
    OC_EXPECT(t->nullable || t->kind == TypeKind::null, corrupt, "null scalar for non-nullable {}",
              t->to_string());
    return make_all_null(t, len);
  }
  auto c = std::make_shared<Column>();
  c->dtype = t;
  c->length = len;
  const DType& st = t->storage();
  switch (st.kind) {
    case TypeKind::boolean: {
      const auto* b = std::get_if<bool>(&s.value);
      OC_EXPECT(b, corrupt, "expected a bool scalar");
      c->buffers.push_back(make_bitmap(len, *b));
      break;
    }
    case TypeKind::primitive: {
      OC_ASSIGN_OR_RETURN(uint64_t bits, scalar_to_bits(s, st.ptype));
      const size_t w = ptype_width(st.ptype);
      Buffer vals = Buffer::allocate_array(len, w);
      uint8_t* o = vals.mutable_data();
      for (uint64_t i = 0; i < len; ++i) std::memcpy(o + i * w, &bits, w);
      c->buffers.push_back(std::move(vals));
      break;
    }
    case TypeKind::decimal: {
      OC_ASSIGN_OR_RETURN(auto bytes, scalar_to_decimal(s));
      const size_t w = fixed_width_of(st);
      Buffer vals = Buffer::allocate_array(len, w);
      for (uint64_t i = 0; i < len; ++i) std::memcpy(vals.mutable_data() + i * w, bytes.data(), w);
      c->buffers.push_back(std::move(vals));
      break;
    }
    case TypeKind::utf8:
    case TypeKind::binary: {
      std::span<const uint8_t> bytes;
      if (const auto* str = std::get_if<std::string>(&s.value)) {
        bytes = {reinterpret_cast<const uint8_t*>(str->data()), str->size()};
      } else if (const auto* b = std::get_if<std::vector<uint8_t>>(&s.value)) {
        bytes = *b;
      } else {
        return OC_ERROR(Errc::corrupt, "expected a string scalar");
      }
      const uint64_t total = saturating_mul(bytes.size(), len);
      OC_EXPECT(total <= INT32_MAX, unsupported,
                "constant string column of {} x {} bytes exceeds 2 GiB", len, bytes.size());
      Buffer offs = Buffer::allocate_array(saturating_add(len, 1), sizeof(int32_t));
      Buffer data = Buffer::allocate(total);
      for (uint64_t i = 0; i <= len; ++i)
        offs.mutable_as<int32_t>()[i] = static_cast<int32_t>(i * bytes.size());
      for (uint64_t i = 0; i < len; ++i)
        std::memcpy(data.mutable_data() + i * bytes.size(), bytes.data(), bytes.size());
      c->buffers.push_back(std::move(offs));
      c->buffers.push_back(std::move(data));
      break;
    }
    case TypeKind::struct_: {
      const auto* items = std::get_if<std::vector<Scalar>>(&s.value);
      OC_EXPECT(items && items->size() == st.children.size(), corrupt,
                "struct scalar with {} fields (kind {}) for {}", items ? items->size() : 0,
                s.value.index(), t->to_string());
      for (size_t i = 0; i < items->size(); ++i) {
        OC_ASSIGN_OR_RETURN(auto f, scalar_to_column((*items)[i], st.children[i], len));
        c->children.push_back(std::move(f));
      }
      break;
    }
    case TypeKind::list:
    case TypeKind::fixed_size_list: {
      const auto* items = std::get_if<std::vector<Scalar>>(&s.value);
      OC_EXPECT(items, corrupt, "expected a list scalar");
      const uint64_t k = items->size();
      OC_EXPECT(st.kind != TypeKind::fixed_size_list || k == st.list_size, corrupt,
                "fixed-size list scalar has {} items, expected {}", k, st.list_size);
      std::vector<ColumnPtr> one;
      for (const auto& item : *items) {
        OC_ASSIGN_OR_RETURN(auto e, scalar_to_column(item, st.children[0], 1));
        one.push_back(std::move(e));
      }
      ColumnPtr elems;
      if (one.empty()) {
        OC_ASSIGN_OR_RETURN(elems, make_all_null(st.children[0], 0));
      } else {
        OC_ASSIGN_OR_RETURN(elems, concat(one));
      }
      std::vector<uint64_t> idx;
      idx.reserve(len * k);
      for (uint64_t i = 0; i < len; ++i)
        for (uint64_t j = 0; j < k; ++j) idx.push_back(j);
      OC_ASSIGN_OR_RETURN(auto repeated, take(elems, idx));
      if (st.kind == TypeKind::list) {
        OC_EXPECT(len * k <= INT32_MAX, unsupported, "constant list column exceeds 2^31 elements");
        Buffer offs = Buffer::allocate((len + 1) * 4);
        for (uint64_t i = 0; i <= len; ++i)
          offs.mutable_as<int32_t>()[i] = static_cast<int32_t>(i * k);
        c->buffers.push_back(std::move(offs));
      }
      c->children.push_back(std::move(repeated));
      break;
    }
    case TypeKind::null:
      c->null_count = static_cast<int64_t>(len);
      break;
    default:
      return OC_ERROR(Errc::unsupported, "constant of {}", t->to_string());
  }
  return ColumnPtr(std::move(c));
}

std::string scalar_to_string(const Scalar& s, const DType& t) {
  struct V {
    const DType& t;
    std::string operator()(const Scalar::Null&) const { return "null"; }
    std::string operator()(bool b) const { return b ? "true" : "false"; }
    std::string operator()(int64_t v) const { return std::to_string(v); }
    std::string operator()(uint64_t v) const { return std::to_string(v); }
    std::string operator()(float v) const { return fmt::format("{}", v); }
    std::string operator()(double v) const { return fmt::format("{}", v); }
    std::string operator()(const Scalar::F16& h) const {
      return fmt::format("f16:{:#06x}", h.bits);
    }
    std::string operator()(const std::string& v) const { return fmt::format("\"{}\"", v); }
    std::string operator()(const std::vector<uint8_t>& v) const {
      return t.storage().kind == TypeKind::decimal ? fmt::format("decimal[{}B]", v.size())
                                                   : fmt::format("bytes[{}]", v.size());
    }
    std::string operator()(const std::vector<Scalar>& v) const {
      return fmt::format("[{} items]", v.size());
    }
  };
  return std::visit(V{t}, s.value);
}

}  // namespace oc::format
