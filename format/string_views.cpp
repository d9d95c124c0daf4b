// SPDX-License-Identifier: Apache-2.0
#include "format/string_views.hpp"

#include <algorithm>
#include <cstring>
#include <limits>

#include "config/checked_size.hpp"

namespace oc::format {
namespace {

constexpr uint64_t kI32Max = static_cast<uint64_t>(std::numeric_limits<int32_t>::max());

const uint8_t* view_at(const Column& c, uint64_t i) noexcept {
  return c.buffers[0].data() + (c.offset + i) * kViewBytes;
}

// Whether the view at @p v (of a row that is valid when @p valid) is canonical; a valid row's
// view that points outside @p data is an error naming @p row.
Result<bool> check_view(const uint8_t* v, bool valid, std::span<const Buffer> data, uint64_t row) {
  static constexpr uint8_t kZeros[kViewBytes] = {};
  if (!valid) return std::memcmp(v, kZeros, kViewBytes) == 0;
  const uint32_t size = load_le<uint32_t>(v);
  if (size <= kMaxInlined) {
    return std::memcmp(v + 4 + size, kZeros, kMaxInlined - size) == 0;
  }
  const uint32_t buffer = load_le<uint32_t>(v + 8);
  const uint32_t offset = load_le<uint32_t>(v + 12);
  OC_EXPECT(size <= kI32Max && offset <= kI32Max, corrupt,
            "string view of row {} holds {} bytes at offset {}, past Arrow's i32 fields", row, size,
            offset);
  OC_EXPECT(buffer < data.size(), corrupt, "string view of row {} names data buffer {} of {}", row,
            buffer, data.size());
  OC_EXPECT(range_within(offset, size, data[buffer].size()), corrupt,
            "string view of row {} reads bytes [{}, {}) of a {}-byte buffer", row, offset,
            uint64_t{offset} + size, data[buffer].size());
  return std::memcmp(v + 4, data[buffer].data() + offset, 4) == 0;
}

Result<ColumnPtr> views_from_offsets(const ColumnPtr& c) {
  const uint64_t n = c->length;
  const Buffer& bytes = c->buffers[1];
  Buffer validity = validity_from_zero(*c);
  Buffer views = Buffer::allocate_array_for_overwrite(n, kViewBytes);
  const int32_t* o = c->offsets();
  const uint8_t* valid = validity.empty() ? nullptr : validity.data();
  bool any_long = false;
  for (uint64_t i = 0; i < n; ++i) {
    uint8_t* v = views.mutable_data() + i * kViewBytes;
    if (valid != nullptr && !bitmap_get(valid, i)) {
      std::memset(v, 0, kViewBytes);
      continue;
    }
    any_long |= store_view_at(v, bytes.data(), bytes.size(), static_cast<uint32_t>(o[i]),
                              static_cast<uint32_t>(o[i + 1] - o[i]));
  }
  auto out = std::make_shared<Column>();
  out->dtype = c->dtype;
  out->length = n;
  out->null_count = validity.empty() ? 0 : c->null_count;
  out->validity = std::move(validity);
  std::vector<Buffer> data;
  if (any_long) data.push_back(bytes);  // no value is copied
  out->buffers = view_buffers(std::move(views), std::move(data));
  out->string_views = true;
  return ColumnPtr(std::move(out));
}

Result<ColumnPtr> offsets_from_views(const ColumnPtr& c) {
  const uint64_t n = c->length;
  const std::span<const Buffer> data = view_data(*c);
  uint64_t total = 0;
  for (uint64_t i = 0; i < n; ++i) total += load_le<uint32_t>(view_at(*c, i));  // nulls are 0
  OC_EXPECT(total <= kI32Max, unsupported,
            "string column of {} bytes exceeds Arrow's 2 GiB i32 offsets", total);
  // kMaxInlined bytes of scratch past the end let an inlined value be copied as one block.
  Buffer offsets = Buffer::allocate_array_for_overwrite(n + 1, sizeof(int32_t));
  Buffer bytes = Buffer::allocate_for_overwrite(total + kMaxInlined).slice(0, total);
  int32_t* oo = offsets.mutable_as<int32_t>();
  uint8_t* d = bytes.mutable_data();
  int32_t pos = 0;
  for (uint64_t i = 0; i < n; ++i) {
    oo[i] = pos;
    const uint8_t* v = view_at(*c, i);
    const uint32_t size = load_le<uint32_t>(v);
    if (size <= kMaxInlined) {
      std::memcpy(d + pos, v + 4, kMaxInlined);
    } else {
      std::memcpy(d + pos, data[load_le<uint32_t>(v + 8)].data() + load_le<uint32_t>(v + 12), size);
    }
    pos += static_cast<int32_t>(size);
  }
  oo[n] = pos;
  auto out = std::make_shared<Column>();
  out->dtype = c->dtype;
  out->length = n;
  out->validity = validity_from_zero(*c);
  out->null_count = out->validity.empty() ? 0 : c->null_count;
  out->buffers.push_back(std::move(offsets));
  out->buffers.push_back(std::move(bytes));
  return ColumnPtr(std::move(out));
}

}  // namespace

std::vector<Buffer> view_buffers(Buffer views, std::vector<Buffer> data) {
  std::vector<Buffer> out;
  out.reserve(data.size() + 2);
  out.push_back(std::move(views));
  Buffer sizes;
  if (!data.empty()) {
    sizes = Buffer::allocate_array_for_overwrite(data.size(), sizeof(int64_t));
    for (size_t k = 0; k < data.size(); ++k) {
      const auto size = static_cast<int64_t>(data[k].size());
      std::memcpy(sizes.mutable_data() + k * sizeof(int64_t), &size, sizeof(int64_t));
    }
  }
  for (Buffer& b : data) out.push_back(std::move(b));
  out.push_back(std::move(sizes));
  return out;
}

std::span<const Buffer> view_data(const Column& c) noexcept {
  return {c.buffers.data() + 1, c.buffers.size() - 2};
}

Result<ColumnPtr> make_views_column(const DTypePtr& t, uint64_t n, Buffer validity,
                                    int64_t null_count, Buffer views, std::vector<Buffer> data) {
  OC_EXPECT(holds_at_least(views.size(), n, kViewBytes), corrupt,
            "string views buffer of {} bytes holds fewer than {} views", views.size(), n);
  OC_EXPECT(data.size() <= kI32Max, corrupt, "{} string data buffers exceed Arrow's i32 index",
            data.size());
  auto valid = [&](uint64_t i) { return validity.empty() || bitmap_get(validity.data(), i); };
  // Arrow aligns views to 16 bytes; a slice of a segment might not be.
  bool canonical = reinterpret_cast<uintptr_t>(views.data()) % alignof(int64_t) == 0;
  for (uint64_t i = 0; i < n; ++i) {
    OC_ASSIGN_OR_RETURN(bool ok, check_view(views.data() + i * kViewBytes, valid(i), data, i));
    canonical = canonical && ok;
  }
  if (!canonical) {
    Buffer fixed = Buffer::allocate_array_for_overwrite(n, kViewBytes);
    for (uint64_t i = 0; i < n; ++i) {
      const uint8_t* v = views.data() + i * kViewBytes;
      uint8_t* o = fixed.mutable_data() + i * kViewBytes;
      if (!valid(i)) {
        std::memset(o, 0, kViewBytes);
        continue;
      }
      const uint32_t size = load_le<uint32_t>(v);
      const uint32_t buffer = load_le<uint32_t>(v + 8), offset = load_le<uint32_t>(v + 12);
      store_view(o, size <= kMaxInlined ? v + 4 : data[buffer].data() + offset, size, buffer,
                 offset);
    }
    views = std::move(fixed);
  } else {
    views = views.slice(0, n * kViewBytes);
  }
  auto c = std::make_shared<Column>();
  c->dtype = t;
  c->length = n;
  c->validity = std::move(validity);
  c->null_count = c->validity.empty() ? 0 : null_count;
  c->buffers = view_buffers(std::move(views), std::move(data));
  c->string_views = true;
  return ColumnPtr(std::move(c));
}

std::string_view string_at(const Column& c, uint64_t i) noexcept {
  if (!c.string_views) {
    const int32_t* o = c.offsets();
    return {reinterpret_cast<const char*>(c.buffers[1].data()) + o[i],
            static_cast<size_t>(o[i + 1] - o[i])};
  }
  const uint8_t* v = view_at(c, i);
  const uint32_t size = load_le<uint32_t>(v);
  const uint8_t* at = size <= kMaxInlined ? v + 4
                                          : c.buffers[1 + load_le<uint32_t>(v + 8)].data() +
                                                load_le<uint32_t>(v + 12);
  return {reinterpret_cast<const char*>(at), size};
}

Result<ColumnPtr> string_offsets(const ColumnPtr& c) {
  return c->string_views ? offsets_from_views(c) : c;
}

Result<ColumnPtr> with_string_layout(const ColumnPtr& c, StringLayout to) {
  const DType& s = c->dtype->storage();
  switch (s.kind) {
    case TypeKind::utf8:
    case TypeKind::binary:
      if (c->string_views == (to == StringLayout::views)) return c;
      return to == StringLayout::views ? views_from_offsets(c) : offsets_from_views(c);
    case TypeKind::struct_:
    case TypeKind::list:
    case TypeKind::fixed_size_list: {
      std::vector<ColumnPtr> kids;
      bool changed = false;
      for (const ColumnPtr& k : c->children) {
        OC_ASSIGN_OR_RETURN(ColumnPtr converted, with_string_layout(k, to));
        changed = changed || converted != k;
        kids.push_back(std::move(converted));
      }
      if (!changed) return c;
      auto out = std::make_shared<Column>(*c);
      out->children = std::move(kids);
      return ColumnPtr(std::move(out));
    }
    default:
      return c;
  }
}

Buffer gather_views(const Column& c, std::span<const uint64_t> idx, const uint8_t* valid) {
  const uint64_t n = idx.size();
  Buffer out = Buffer::allocate_array_for_overwrite(n, kViewBytes);
  const uint8_t* in = c.buffers[0].data() + c.offset * kViewBytes;
  uint8_t* o = out.mutable_data();
  if (valid == nullptr) {
    for (uint64_t i = 0; i < n; ++i)
      std::memcpy(o + i * kViewBytes, in + idx[i] * kViewBytes, kViewBytes);
    return out;
  }
  for (uint64_t i = 0; i < n; ++i) {
    if (bitmap_get(valid, i))
      std::memcpy(o + i * kViewBytes, in + idx[i] * kViewBytes, kViewBytes);
    else
      std::memset(o + i * kViewBytes, 0, kViewBytes);
  }
  return out;
}

namespace {
template <class T>
void gather_by(const uint8_t* views, const uint8_t* codes, uint64_t n, uint8_t* out) {
  for (uint64_t i = 0; i < n; ++i) {
    std::memcpy(out + i * kViewBytes, views + load_le<T>(codes + i * sizeof(T)) * kViewBytes,
                kViewBytes);
  }
}
}  // namespace

Buffer gather_views_by_code(const Column& values, const Column& codes) {
  const uint64_t n = codes.length;
  Buffer out = Buffer::allocate_array_for_overwrite(n, kViewBytes);
  const uint8_t* in = view_at(values, 0);
  const size_t width = fixed_width_of(*codes.dtype);
  const uint8_t* c = codes.buffers[0].data() + codes.offset * width;
  switch (width) {
    case 1:
      gather_by<uint8_t>(in, c, n, out.mutable_data());
      break;
    case 2:
      gather_by<uint16_t>(in, c, n, out.mutable_data());
      break;
    case 4:
      gather_by<uint32_t>(in, c, n, out.mutable_data());
      break;
    default:
      gather_by<uint64_t>(in, c, n, out.mutable_data());
      break;
  }
  return out;
}

Result<ConcatenatedViews> concat_views(std::span<const ColumnPtr> parts) {
  uint64_t rows = 0, buffers = 0;
  for (const ColumnPtr& p : parts) {
    rows += p->length;
    buffers += view_data(*p).size();
  }
  OC_EXPECT(buffers <= kI32Max, invalid,
            "concat of {} string data buffers exceeds Arrow's i32 index", buffers);
  ConcatenatedViews out;
  out.views = Buffer::allocate_array_for_overwrite(rows, kViewBytes);
  out.data.reserve(buffers);
  uint8_t* o = out.views.mutable_data();
  for (const ColumnPtr& p : parts) {
    const auto base = static_cast<uint32_t>(out.data.size());
    if (p->length > 0) std::memcpy(o, view_at(*p, 0), p->length * kViewBytes);
    if (base > 0) {
      for (uint64_t i = 0; i < p->length; ++i) {
        uint8_t* v = o + i * kViewBytes;
        if (load_le<uint32_t>(v) > kMaxInlined) {
          const uint32_t renumbered = load_le<uint32_t>(v + 8) + base;
          std::memcpy(v + 8, &renumbered, 4);
        }
      }
    }
    o += p->length * kViewBytes;
    const std::span<const Buffer> d = view_data(*p);
    out.data.insert(out.data.end(), d.begin(), d.end());
  }
  return out;
}

}  // namespace oc::format
