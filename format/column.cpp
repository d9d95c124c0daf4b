// SPDX-License-Identifier: Apache-2.0
#include "format/column.hpp"

#include <algorithm>
#include <cstring>

#include "config/checked_size.hpp"
#include "format/string_views.hpp"

namespace oc::format {

size_t fixed_width_of(const DType& t) {
  const DType& s = t.storage();
  switch (s.kind) {
    case TypeKind::primitive:
      return ptype_width(s.ptype);
    case TypeKind::decimal:
      return s.precision <= 38 ? 16 : 32;
    default:
      return 0;
  }
}

Result<std::string> arrow_format(const DType& t, StringLayout strings) {
  const bool views = strings == StringLayout::views;
  switch (t.kind) {
    case TypeKind::null:
      return std::string("n");
    case TypeKind::boolean:
      return std::string("b");
    case TypeKind::primitive: {
      constexpr const char* kFormats[] = {"C", "S", "I", "L", "c", "s", "i", "l", "e", "f", "g"};
      return std::string(kFormats[static_cast<uint8_t>(t.ptype)]);
    }
    case TypeKind::decimal:
      return t.precision <= 38 ? fmt::format("d:{},{}", t.precision, t.scale)
                               : fmt::format("d:{},{},256", t.precision, t.scale);
    case TypeKind::utf8:
      return std::string(views ? "vu" : "u");
    case TypeKind::binary:
      return std::string(views ? "vz" : "z");
    case TypeKind::list:
      return std::string("+l");
    case TypeKind::fixed_size_list:
      return fmt::format("+w:{}", t.list_size);
    case TypeKind::struct_:
      return std::string("+s");
    case TypeKind::extension: {
      auto temporal = temporal_of(t);
      if (!temporal.ok()) {
        // Unknown extensions travel as their storage type.
        if (temporal.error().code() == Errc::unsupported)
          return arrow_format(*t.children[0], strings);
        return std::move(temporal).error();
      }
      const PType p = t.children[0]->ptype;
      constexpr char kUnit[] = {'n', 'u', 'm', 's'};
      switch (temporal->kind) {
        case Temporal::Kind::date:
          if (temporal->unit == TimeUnit::days && p == PType::i32) return std::string("tdD");
          if (temporal->unit == TimeUnit::ms && p == PType::i64) return std::string("tdm");
          break;
        case Temporal::Kind::time:
          if (temporal->unit == TimeUnit::s || temporal->unit == TimeUnit::ms) {
            if (p == PType::i32)
              return fmt::format("tt{}", kUnit[static_cast<int>(temporal->unit)]);
          } else if (temporal->unit != TimeUnit::days && p == PType::i64) {
            return fmt::format("tt{}", kUnit[static_cast<int>(temporal->unit)]);
          }
          break;
        case Temporal::Kind::timestamp:
          if (temporal->unit != TimeUnit::days && p == PType::i64) {
            return fmt::format("ts{}:{}", kUnit[static_cast<int>(temporal->unit)], temporal->tz);
          }
          break;
      }
      return OC_ERROR(Errc::corrupt, "{} with unit {} cannot be stored as {}", t.ext_id,
                      static_cast<int>(temporal->unit), ptype_name(p));
    }
    case TypeKind::variant:
    case TypeKind::union_:
      break;
  }
  return OC_ERROR(Errc::unsupported, "no Arrow mapping for {}", t.to_string());
}

uint64_t unsigned_at(const Column& c, uint64_t i) noexcept {
  const size_t width = fixed_width_of(*c.dtype);
  const uint8_t* p = c.buffers[0].data() + (c.offset + i) * width;
  switch (width) {
    case 1:
      return *p;
    case 2:
      return load_le<uint16_t>(p);
    case 4:
      return load_le<uint32_t>(p);
    default:
      return load_le<uint64_t>(p);
  }
}

namespace {
template <class T>
void widen_into(const uint8_t* p, std::vector<uint64_t>& out) {
  for (size_t i = 0; i < out.size(); ++i) out[i] = load_le<T>(p + i * sizeof(T));
}
}  // namespace

std::vector<uint64_t> unsigned_values(const Column& c) {
  std::vector<uint64_t> out(c.length);
  const size_t width = fixed_width_of(*c.dtype);
  const uint8_t* p = c.buffers[0].data() + c.offset * width;
  // One loop per width rather than a switch per row: this feeds every dictionary gather.
  switch (width) {
    case 1:
      widen_into<uint8_t>(p, out);
      break;
    case 2:
      widen_into<uint16_t>(p, out);
      break;
    case 4:
      widen_into<uint32_t>(p, out);
      break;
    default:
      widen_into<uint64_t>(p, out);
      break;
  }
  return out;
}

namespace {
template <class T>
uint64_t max_of(const uint8_t* p, uint64_t n) {
  T m = 0;
  for (uint64_t i = 0; i < n; ++i) m = std::max(m, load_le<T>(p + i * sizeof(T)));
  return m;
}
}  // namespace

uint64_t max_unsigned(const Column& c) noexcept {
  const size_t width = fixed_width_of(*c.dtype);
  const uint8_t* p = c.buffers[0].data() + c.offset * width;
  switch (width) {
    case 1:
      return max_of<uint8_t>(p, c.length);
    case 2:
      return max_of<uint16_t>(p, c.length);
    case 4:
      return max_of<uint32_t>(p, c.length);
    default:
      return max_of<uint64_t>(p, c.length);
  }
}

Buffer validity_from_zero(const Column& c) {
  if (c.validity.empty() || c.null_count == 0) return Buffer();
  if (c.offset == 0) return c.validity;
  Buffer bits = make_bitmap(c.length, false);
  copy_bits(c.validity.data(), c.offset, bits.mutable_data(), 0, c.length);
  return bits;
}

Buffer make_bitmap(uint64_t len, bool value) {
  Buffer b = Buffer::allocate(bitmap_bytes(len));
  if (value) std::memset(b.mutable_data(), 0xff, b.size());
  return b;
}

int64_t count_nulls(const uint8_t* bits, uint64_t offset, uint64_t len) {
  uint64_t valid = 0;
  uint64_t i = offset;
  const uint64_t end = offset + len;
  for (; i < end && (i & 7); ++i) valid += bitmap_get(bits, i);
  for (; i + 64 <= end; i += 64) {
    uint64_t w;
    std::memcpy(&w, bits + i / 8, 8);
    valid += static_cast<uint64_t>(__builtin_popcountll(w));
  }
  for (; i < end; ++i) valid += bitmap_get(bits, i);
  return static_cast<int64_t>(len - valid);
}

void copy_bits(const uint8_t* src, uint64_t src_off, uint8_t* dst, uint64_t dst_off, uint64_t len) {
  if ((src_off & 7) == 0 && (dst_off & 7) == 0) {
    std::memcpy(dst + dst_off / 8, src + src_off / 8, len / 8);
    for (uint64_t i = len & ~uint64_t{7}; i < len; ++i) {
      bitmap_set(dst, dst_off + i, bitmap_get(src, src_off + i));
    }
    return;
  }
  for (uint64_t i = 0; i < len; ++i) bitmap_set(dst, dst_off + i, bitmap_get(src, src_off + i));
}

namespace {

Result<std::shared_ptr<Column>> empty_like(const DTypePtr& t, uint64_t len) {
  auto c = std::make_shared<Column>();
  c->dtype = t;
  c->length = len;
  return c;
}

}  // namespace

Result<ColumnPtr> make_all_null(const DTypePtr& t, uint64_t len) {
  OC_ASSIGN_OR_RETURN(auto c, empty_like(t, len));
  if (t->kind != TypeKind::null) {
    c->validity = make_bitmap(len, false);
    c->null_count = static_cast<int64_t>(len);
  } else {
    c->null_count = static_cast<int64_t>(len);
  }
  const DType& s = t->storage();
  switch (s.kind) {
    case TypeKind::null:
      break;
    case TypeKind::boolean:
      c->buffers.push_back(make_bitmap(len, false));
      break;
    case TypeKind::primitive:
    case TypeKind::decimal:
      c->buffers.push_back(Buffer::allocate_array(len, fixed_width_of(s)));
      break;
    case TypeKind::utf8:
    case TypeKind::binary:
      c->buffers.push_back(Buffer::allocate_array(saturating_add(len, 1), sizeof(int32_t)));
      c->buffers.push_back(Buffer::allocate(0));
      break;
    case TypeKind::list: {
      c->buffers.push_back(Buffer::allocate((len + 1) * 4));
      OC_ASSIGN_OR_RETURN(auto e, make_all_null(s.children[0], 0));
      c->children.push_back(e);
      break;
    }
    case TypeKind::fixed_size_list: {
      OC_ASSIGN_OR_RETURN(auto e, make_all_null(s.children[0], len * s.list_size));
      c->children.push_back(e);
      break;
    }
    case TypeKind::struct_:
      for (const auto& f : s.children) {
        OC_ASSIGN_OR_RETURN(auto e, make_all_null(f, len));
        c->children.push_back(e);
      }
      break;
    default:
      return OC_ERROR(Errc::unsupported, "cannot build nulls of {}", t->to_string());
  }
  return ColumnPtr(std::move(c));
}

ColumnPtr slice(const ColumnPtr& c, uint64_t begin, uint64_t len) {
  if (begin == 0 && len == c->length) return c;
  auto s = std::make_shared<Column>(*c);
  s->offset = c->offset + begin;
  s->length = len;
  s->null_count = c->validity.empty() ? 0 : count_nulls(c->validity.data(), s->offset, len);
  return s;
}

ColumnPtr with_validity(const ColumnPtr& c, Buffer validity, const DTypePtr& t) {
  auto out = std::make_shared<Column>(*c);
  out->dtype = t;
  if (validity.empty()) {
    out->validity = Buffer();
    out->null_count = 0;
    return out;
  }
  out->null_count = count_nulls(validity.data(), 0, c->length);
  if (c->offset == 0) {
    out->validity = std::move(validity);
  } else {
    Buffer shifted = make_bitmap(c->offset + c->length, true);
    copy_bits(validity.data(), 0, shifted.mutable_data(), c->offset, c->length);
    out->validity = std::move(shifted);
  }
  if (out->null_count == 0) out->validity = Buffer();
  return out;
}

namespace {

// Copies the values at @p idx (utf8/binary: @p off offsets into @p in, @p in_size bytes) to
// @p d back to back, writing the start of each at o[i] and the end at o[n]; rows whose bit in
// @p valid (when given) is clear get no bytes. @p d has kShortValue bytes of scratch past the
// values: a short value is copied as one fixed-size block (no call per row), the bytes past it
// overwritten by the next value or left in the scratch.
constexpr int32_t kShortValue = 32;
// Sources up to this size are copied into a padded buffer first: a dictionary's values, cheap to
// copy next to the rows gathered from them, and short enough that many values end near the end.
constexpr size_t kPadSourceBelow = 64 << 10;
template <bool kHasValidity>
void gather_strings(const int32_t* off, const uint8_t* in, size_t in_size,
                    std::span<const uint64_t> idx, const uint8_t* valid, int32_t* o, uint8_t* d) {
  // Values starting at or before this one can be read as a whole block within the buffer.
  const int64_t block_from_limit = static_cast<int64_t>(in_size) - kShortValue;
  int32_t pos = 0;
  for (size_t i = 0; i < idx.size(); ++i) {
    o[i] = pos;
    if (kHasValidity && !bitmap_get(valid, i)) continue;
    const int32_t a = off[idx[i]], b = off[idx[i] + 1];
    if (b - a <= kShortValue && a <= block_from_limit) {
      std::memcpy(d + pos, in + a, kShortValue);
    } else {
      std::memcpy(d + pos, in + a, static_cast<size_t>(b - a));
    }
    pos += b - a;
  }
  o[idx.size()] = pos;
}

// Rows [begin, end) of a list's elements.
struct ElementRange {
  uint64_t begin, end;
};

// The elements of @p ranges of @p c, @p total in all, in order: what a take of lists gathers. A
// fixed-width column without nulls is copied a range at a time (a token list is hundreds of
// values); any other is taken row by row.
Result<ColumnPtr> take_ranges(const ColumnPtr& c, std::span<const ElementRange> ranges,
                              uint64_t total) {
  const DType& s = c->dtype->storage();
  if ((s.kind == TypeKind::primitive || s.kind == TypeKind::decimal) && c->validity.empty()) {
    const size_t w = fixed_width_of(s);
    OC_ASSIGN_OR_RETURN(auto out, empty_like(c->dtype, total));
    Buffer vals = Buffer::allocate_array_for_overwrite(total, w);
    const uint8_t* in = c->buffers[0].data() + c->offset * w;
    uint8_t* o = vals.mutable_data();
    for (const ElementRange& r : ranges) {
      OC_EXPECT(r.end <= c->length, invalid, "take index {} out of bounds for length {}", r.end - 1,
                c->length);
      if (r.end == r.begin) continue;
      std::memcpy(o, in + r.begin * w, (r.end - r.begin) * w);
      o += (r.end - r.begin) * w;
    }
    out->buffers.push_back(std::move(vals));
    return ColumnPtr(std::move(out));
  }
  std::vector<uint64_t> idx;
  idx.reserve(total);
  for (const ElementRange& r : ranges) {
    for (uint64_t k = r.begin; k < r.end; ++k) idx.push_back(k);
  }
  return take(c, idx);
}

}  // namespace

Result<ColumnPtr> take(const ColumnPtr& c, std::span<const uint64_t> idx,
                       const uint8_t* index_valid) {
  const uint64_t n = idx.size();
  const uint64_t length = c->length;
  // Without an index validity, the largest index tells (one pass that vectorises); the bad one
  // is looked for only when it is out of bounds.
  uint64_t largest = 0;
  if (!index_valid) {
    for (uint64_t i : idx) largest = std::max(largest, i);
  }
  if (index_valid || (n > 0 && largest >= length)) {
    for (uint64_t i = 0; i < n; ++i) {
      if (index_valid && !bitmap_get(index_valid, i)) continue;
      OC_EXPECT(idx[i] < length, invalid, "take index {} out of bounds for length {}", idx[i],
                length);
    }
  }
  OC_ASSIGN_OR_RETURN(auto out, empty_like(c->dtype, n));
  const bool any_null = index_valid != nullptr || !c->validity.empty();
  if (any_null && c->dtype->kind != TypeKind::null) {
    Buffer v = make_bitmap(n, true);
    int64_t nulls = 0;
    for (uint64_t i = 0; i < n; ++i) {
      const bool ok = (!index_valid || bitmap_get(index_valid, i)) && c->is_valid(idx[i]);
      if (!ok) {
        bitmap_set(v.mutable_data(), i, false);
        ++nulls;
      }
    }
    if (nulls > 0) {
      out->validity = std::move(v);
      out->null_count = nulls;
    }
  }
  auto src = [&](uint64_t i) { return (index_valid && !bitmap_get(index_valid, i)) ? 0 : idx[i]; };
  const DType& s = c->dtype->storage();
  switch (s.kind) {
    case TypeKind::null:
      out->null_count = static_cast<int64_t>(n);
      break;
    case TypeKind::boolean: {
      Buffer bits = make_bitmap(n, false);
      const uint8_t* in = c->buffers[0].data();
      for (uint64_t i = 0; i < n; ++i) {
        if (bitmap_get(in, c->offset + src(i))) bitmap_set(bits.mutable_data(), i, true);
      }
      out->buffers.push_back(std::move(bits));
      break;
    }
    case TypeKind::primitive:
    case TypeKind::decimal: {
      const size_t w = fixed_width_of(s);
      Buffer vals = Buffer::allocate_array_for_overwrite(n, w);
      const uint8_t* in = c->buffers[0].data() + c->offset * w;
      uint8_t* o = vals.mutable_data();
      switch (w) {
        case 1:
          for (uint64_t i = 0; i < n; ++i) o[i] = in[src(i)];
          break;
        case 2:
          for (uint64_t i = 0; i < n; ++i) std::memcpy(o + i * 2, in + src(i) * 2, 2);
          break;
        case 4:
          for (uint64_t i = 0; i < n; ++i) std::memcpy(o + i * 4, in + src(i) * 4, 4);
          break;
        case 8:
          for (uint64_t i = 0; i < n; ++i) std::memcpy(o + i * 8, in + src(i) * 8, 8);
          break;
        default:
          for (uint64_t i = 0; i < n; ++i) std::memcpy(o + i * w, in + src(i) * w, w);
      }
      out->buffers.push_back(std::move(vals));
      break;
    }
    case TypeKind::utf8:
    case TypeKind::binary: {
      const uint8_t* valid = out->validity.empty() ? nullptr : out->validity.data();
      if (c->string_views) {
        // 16 bytes a row; the values stay where they are.
        std::vector<Buffer> data(view_data(*c).begin(), view_data(*c).end());
        out->buffers = view_buffers(gather_views(*c, idx, valid), std::move(data));
        out->string_views = true;
        break;
      }
      const int32_t* off = c->offsets();
      uint64_t total = 0;
      for (uint64_t i = 0; i < n; ++i) {
        if (!valid || bitmap_get(valid, i))
          total += static_cast<uint64_t>(off[idx[i] + 1] - off[idx[i]]);
      }
      OC_EXPECT(total <= INT32_MAX, invalid, "take result of {} bytes exceeds 2 GiB", total);
      Buffer offs = Buffer::allocate_for_overwrite((n + 1) * 4);
      Buffer data = Buffer::allocate_for_overwrite(total + kShortValue).slice(0, total);
      // A small source that the output outgrows (a dictionary's values) is padded first, so that
      // all its values are copied as blocks.
      Buffer in = c->buffers[1];
      if (in.size() <= kPadSourceBelow && in.size() < total) {
        Buffer padded = Buffer::allocate(in.size() + kShortValue);
        std::memcpy(padded.mutable_data(), in.data(), in.size());
        in = std::move(padded);
      }
      // An invalid index is a null row (its bit is clear in out->validity): read no value there.
      if (!valid) {
        gather_strings<false>(off, in.data(), in.size(), idx, nullptr, offs.mutable_as<int32_t>(),
                              data.mutable_data());
      } else {
        gather_strings<true>(off, in.data(), in.size(), idx, valid, offs.mutable_as<int32_t>(),
                             data.mutable_data());
      }
      out->buffers.push_back(std::move(offs));
      out->buffers.push_back(std::move(data));
      break;
    }
    case TypeKind::list: {
      const int32_t* off = c->offsets();
      std::vector<ElementRange> ranges;
      ranges.reserve(n);
      Buffer offs = Buffer::allocate((n + 1) * 4);
      int32_t* o = offs.mutable_as<int32_t>();
      uint64_t total = 0;
      for (uint64_t i = 0; i < n; ++i) {
        o[i] = static_cast<int32_t>(total);
        if (out->validity.empty() || bitmap_get(out->validity.data(), i)) {
          const int32_t b = off[src(i)], e = off[src(i) + 1];
          OC_EXPECT(0 <= b && b <= e, invalid, "list row {} has offsets {} to {}", src(i), b, e);
          ranges.push_back({static_cast<uint64_t>(b), static_cast<uint64_t>(e)});
          total += static_cast<uint64_t>(e - b);
          OC_EXPECT(total <= INT32_MAX, invalid, "take result exceeds 2^31 list elements");
        }
      }
      o[n] = static_cast<int32_t>(total);
      OC_ASSIGN_OR_RETURN(auto e, take_ranges(c->children[0], ranges, total));
      out->buffers.push_back(std::move(offs));
      out->children.push_back(std::move(e));
      break;
    }
    case TypeKind::fixed_size_list: {
      std::vector<uint64_t> child_idx;
      child_idx.reserve(n * s.list_size);
      for (uint64_t i = 0; i < n; ++i) {
        for (uint32_t k = 0; k < s.list_size; ++k) {
          child_idx.push_back((c->offset + src(i)) * s.list_size + k);
        }
      }
      OC_ASSIGN_OR_RETURN(auto e, take(c->children[0], child_idx));
      out->children.push_back(std::move(e));
      break;
    }
    case TypeKind::struct_: {
      std::vector<uint64_t> child_idx(n);
      for (uint64_t i = 0; i < n; ++i) child_idx[i] = c->offset + src(i);
      for (const auto& f : c->children) {
        OC_ASSIGN_OR_RETURN(auto e, take(f, child_idx));
        out->children.push_back(std::move(e));
      }
      break;
    }
    default:
      return OC_ERROR(Errc::unsupported, "take on {}", c->dtype->to_string());
  }
  return ColumnPtr(std::move(out));
}

Result<ColumnPtr> gather_codes(const ColumnPtr& values, const Column& codes) {
  const uint64_t n = codes.length;
  const uint64_t limit = values->length;
  auto out_of_range = [&](uint64_t i) {
    return OC_ERROR(Errc::corrupt, "dict code {} at position {} is past the {} dictionary values",
                    unsigned_at(codes, i), i, limit);
  };
  if (codes.null_count == 0) {
    // The largest code tells (one pass in the codes' width, which vectorises); the position is
    // looked for only when one is out of range.
    if (n > 0 && max_unsigned(codes) >= limit) {
      for (uint64_t i = 0; i < n; ++i) {
        if (unsigned_at(codes, i) >= limit) return out_of_range(i);
      }
    }
    if (values->string_views && values->null_count == 0) {
      auto out = std::make_shared<Column>();
      out->dtype = values->dtype;
      out->length = n;
      std::vector<Buffer> data(view_data(*values).begin(), view_data(*values).end());
      out->buffers = view_buffers(gather_views_by_code(*values, codes), std::move(data));
      out->string_views = true;
      return ColumnPtr(std::move(out));
    }
    return take(values, unsigned_values(codes));
  }
  std::vector<uint64_t> idx = unsigned_values(codes);
  const Buffer valid = validity_from_zero(codes);
  for (uint64_t i = 0; i < n; ++i) {
    if (idx[i] >= limit && codes.is_valid(i)) return out_of_range(i);
  }
  return take(values, idx, valid.data());
}

Result<ColumnPtr> concat(std::span<const ColumnPtr> parts) {
  OC_EXPECT(!parts.empty(), invalid, "concat of no columns");
  if (parts.size() == 1) return parts[0];
  // Concatenation is a gather over (part, row) pairs; reuse `take` per part and stitch buffers.
  const DTypePtr& t = parts[0]->dtype;
  uint64_t total = 0;
  for (const auto& p : parts) {
    OC_EXPECT(*p->dtype == *t, invalid, "concat of {} and {}", t->to_string(),
              p->dtype->to_string());
    total += p->length;
  }
  OC_ASSIGN_OR_RETURN(auto out, empty_like(t, total));
  bool any_null = false;
  for (const auto& p : parts) any_null |= p->null_count > 0;
  if (any_null) {
    Buffer v = make_bitmap(total, true);
    uint64_t at = 0;
    for (const auto& p : parts) {
      if (!p->validity.empty())
        copy_bits(p->validity.data(), p->offset, v.mutable_data(), at, p->length);
      at += p->length;
    }
    out->null_count = count_nulls(v.data(), 0, total);
    out->validity = std::move(v);
  }
  const DType& s = t->storage();
  switch (s.kind) {
    case TypeKind::null:
      out->null_count = static_cast<int64_t>(total);
      break;
    case TypeKind::boolean: {
      Buffer bits = make_bitmap(total, false);
      uint64_t at = 0;
      for (const auto& p : parts) {
        copy_bits(p->buffers[0].data(), p->offset, bits.mutable_data(), at, p->length);
        at += p->length;
      }
      out->buffers.push_back(std::move(bits));
      break;
    }
    case TypeKind::primitive:
    case TypeKind::decimal: {
      const size_t w = fixed_width_of(s);
      Buffer vals = Buffer::allocate_array_for_overwrite(total, w);
      uint64_t at = 0;
      for (const auto& p : parts) {
        std::memcpy(vals.mutable_data() + at * w, p->buffers[0].data() + p->offset * w,
                    p->length * w);
        at += p->length;
      }
      out->buffers.push_back(std::move(vals));
      break;
    }
    case TypeKind::utf8:
    case TypeKind::binary:
      if (std::any_of(parts.begin(), parts.end(),
                      [](const ColumnPtr& p) { return p->string_views; })) {
        // Chunks of one column may differ (varbinview, then FSST): views take no value copy.
        std::vector<ColumnPtr> views(parts.begin(), parts.end());
        for (ColumnPtr& p : views) {
          OC_ASSIGN_OR_RETURN(p, with_string_layout(p, StringLayout::views));
        }
        OC_ASSIGN_OR_RETURN(ConcatenatedViews all, concat_views(views));
        out->buffers = view_buffers(std::move(all.views), std::move(all.data));
        out->string_views = true;
        break;
      }
      [[fallthrough]];
    case TypeKind::list: {
      uint64_t bytes = 0;
      std::vector<ColumnPtr> elems;
      for (const auto& p : parts) {
        const int32_t* o = p->offsets();
        bytes += static_cast<uint64_t>(o[p->length] - o[0]);
        if (s.kind == TypeKind::list) {
          elems.push_back(slice(p->children[0], static_cast<uint64_t>(o[0]),
                                static_cast<uint64_t>(o[p->length] - o[0])));
        }
      }
      OC_EXPECT(bytes <= INT32_MAX, invalid, "concat result exceeds 2^31 elements or bytes");
      Buffer offs = Buffer::allocate_for_overwrite((total + 1) * 4);
      Buffer data = Buffer::allocate_for_overwrite(s.kind == TypeKind::list ? 0 : bytes);
      int32_t* oo = offs.mutable_as<int32_t>();
      uint64_t at = 0;
      int32_t pos = 0;
      for (const auto& p : parts) {
        const int32_t* o = p->offsets();
        for (uint64_t i = 0; i < p->length; ++i) oo[at + i] = pos + (o[i] - o[0]);
        const int32_t n = o[p->length] - o[0];
        if (s.kind != TypeKind::list) {
          std::memcpy(data.mutable_data() + pos, p->buffers[1].data() + o[0],
                      static_cast<size_t>(n));
        }
        pos += n;
        at += p->length;
      }
      oo[total] = pos;
      out->buffers.push_back(std::move(offs));
      if (s.kind == TypeKind::list) {
        OC_ASSIGN_OR_RETURN(auto e, concat(elems));
        out->children.push_back(std::move(e));
      } else {
        out->buffers.push_back(std::move(data));
      }
      break;
    }
    case TypeKind::fixed_size_list: {
      std::vector<ColumnPtr> elems;
      for (const auto& p : parts) {
        elems.push_back(slice(p->children[0], p->offset * s.list_size, p->length * s.list_size));
      }
      if (total == 0 || s.list_size == 0) {
        OC_ASSIGN_OR_RETURN(auto e, make_all_null(s.children[0], 0));
        out->children.push_back(std::move(e));
      } else {
        OC_ASSIGN_OR_RETURN(auto e, concat(elems));
        out->children.push_back(std::move(e));
      }
      break;
    }
    case TypeKind::struct_: {
      for (size_t f = 0; f < s.children.size(); ++f) {
        std::vector<ColumnPtr> fields;
        for (const auto& p : parts) fields.push_back(slice(p->children[f], p->offset, p->length));
        OC_ASSIGN_OR_RETURN(auto e, concat(fields));
        out->children.push_back(std::move(e));
      }
      break;
    }
    default:
      return OC_ERROR(Errc::unsupported, "concat of {}", t->to_string());
  }
  return ColumnPtr(std::move(out));
}

Result<ColumnPtr> compact(const ColumnPtr& c) {
  if (c->offset == 0) return c;
  std::vector<uint64_t> idx(c->length);
  for (uint64_t i = 0; i < c->length; ++i) idx[i] = i;
  return take(c, idx);
}

}  // namespace oc::format
