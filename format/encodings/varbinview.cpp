// SPDX-License-Identifier: Apache-2.0
// vortex.varbinview: strings and binary as 16-byte views over data buffers (Arrow's "string
// view", Umbra's "German strings").
//
//   metadata: empty
//   buffers:  [data_0, ..., data_{k-1}, views]; the views buffer is always the LAST one and holds
//             exactly len x 16 bytes; k may be 0 when every value is inlined.
//   children: [validity] (optional; a Bool array of len rows)
//
// One view, little endian:
//
//   bytes 0..4    u32 size
//   size <= 12:   bytes 4..16  the value itself, zero padded
//   size  > 12:   bytes 4..8   the first four bytes of the value (a comparison prefix)
//                 bytes 8..12  u32 index of the data buffer holding the value
//                 bytes 12..16 u32 offset of the value within that buffer
//
// Output: Arrow string / binary views (format/string_views.hpp). A full decode passes the views
// and data buffers through, checked, without copying a value (a copy of the views only where
// one is not canonical): they are fetched bytes, like a primitive's values. A take gathers its
// rows' views and copies their long values into one new data buffer, so the result does not
// keep whole segments alive; it reads only its rows' views, and of the data buffers only its
// rows' values.
#include <cstring>

#include "format/decode.hpp"
#include "format/encodings/registry.hpp"
#include "format/string_views.hpp"

namespace oc::format::encodings {
namespace {

// Checks the shape of a vortex.varbinview node of @p len rows.
Result<void> check_node(const ArrayView& node, const DTypePtr& t, uint64_t len) {
  const DType& st = t->storage();
  OC_EXPECT(st.kind == TypeKind::utf8 || st.kind == TypeKind::binary, corrupt,
            "vortex.varbinview for {}", t->to_string());
  OC_EXPECT(node.metadata.empty(), corrupt,
            "vortex.varbinview metadata must be empty, got {} bytes", node.metadata.size());
  OC_EXPECT(!node.buffers.empty(), corrupt, "vortex.varbinview has no views buffer");
  OC_TRY(expect_shape(node, node.buffers.size(), 0, 1));
  const Buffer& views = node.buffers.back();
  OC_EXPECT(views.size() / kViewBytes == len && views.size() % kViewBytes == 0, corrupt,
            "varbinview views buffer is {} bytes, expected {} views of 16", views.size(), len);
  return {};
}

// Rows row_of(0), ..., row_of(n - 1) as a views column of n rows with their long values copied
// into one data buffer; @p validity (n bits, or empty) says which output rows are valid, and
// their views alone are read.
template <class RowOf>
Result<ColumnPtr> take_views(const ArrayView& node, const DTypePtr& t, uint64_t n, RowOf row_of,
                             Buffer validity, int64_t nulls, DecodeContext& ctx) {
  const Buffer& views = node.buffers.back();
  const std::span<const Buffer> data(node.buffers.data(), node.buffers.size() - 1);
  auto is_valid = [&](uint64_t i) { return validity.empty() || bitmap_get(validity.data(), i); };

  // Pass 1: check every view that is read and size the data.
  for (uint64_t i = 0; ctx.reads_in_part() && i < n; ++i) {
    if (is_valid(i)) ctx.need(views, row_of(i) * kViewBytes, kViewBytes);
  }
  uint64_t total = 0;
  for (uint64_t i = 0; i < n; ++i) {
    if (!is_valid(i)) continue;
    const uint64_t row = row_of(i);
    const uint8_t* view = views.data() + row * kViewBytes;
    const uint32_t size = load_le<uint32_t>(view);
    if (size <= kMaxInlined) continue;
    const uint32_t buffer = load_le<uint32_t>(view + 8), offset = load_le<uint32_t>(view + 12);
    OC_EXPECT(buffer < data.size(), corrupt, "varbinview row {} names data buffer {} of {}", row,
              buffer, data.size());
    OC_EXPECT(range_within(offset, size, data[buffer].size()), corrupt,
              "varbinview row {} reads bytes [{}, {}) of a {}-byte buffer", row, offset,
              uint64_t{offset} + size, data[buffer].size());
    total += size;
    if (ctx.reads_in_part()) ctx.need(data[buffer], offset, size);
  }
  OC_EXPECT(total <= INT32_MAX, unsupported,
            "varbinview take of {} bytes exceeds Arrow's 2 GiB i32 offsets", total);
  OC_TRY(
      ctx.check_alloc(saturating_add(total, saturating_mul(n, kViewBytes)), "varbinview values"));

  // Pass 2: every view is written, canonical (format/string_views.hpp).
  Buffer out_views = Buffer::allocate_array_for_overwrite(n, kViewBytes);
  Buffer bytes = Buffer::allocate_for_overwrite(total);
  uint8_t* out = bytes.mutable_data();
  uint32_t pos = 0;
  for (uint64_t i = 0; i < n; ++i) {
    uint8_t* o = out_views.mutable_data() + i * kViewBytes;
    if (!is_valid(i)) {
      std::memset(o, 0, kViewBytes);
      continue;
    }
    const uint8_t* view = views.data() + row_of(i) * kViewBytes;
    const uint32_t size = load_le<uint32_t>(view);
    if (size <= kMaxInlined) {
      store_view(o, view + 4, size, 0, 0);
      continue;
    }
    const uint8_t* src = data[load_le<uint32_t>(view + 8)].data() + load_le<uint32_t>(view + 12);
    std::memcpy(out + pos, src, size);
    store_view(o, src, size, 0, pos);
    pos += size;
  }
  std::vector<Buffer> kept;
  if (total > 0) kept.push_back(std::move(bytes));
  auto c = std::make_shared<Column>();
  c->dtype = t;
  c->length = n;
  c->validity = std::move(validity);
  c->null_count = nulls;
  c->buffers = view_buffers(std::move(out_views), std::move(kept));
  c->string_views = true;
  return ColumnPtr(std::move(c));
}

Result<ColumnPtr> decode_varbinview(const ArrayView& node, const DTypePtr& t, uint64_t len,
                                    DecodeContext& ctx) {
  OC_TRY(check_node(node, t, len));
  int64_t nulls = 0;
  OC_ASSIGN_OR_RETURN(Buffer validity,
                      decode_validity(node, 0, t->storage().nullable, len, ctx, nulls));
  std::vector<Buffer> data(node.buffers.begin(), node.buffers.end() - 1);
  return make_views_column(t, len, std::move(validity), nulls, node.buffers.back(),
                           std::move(data));
}

Result<ColumnPtr> take_varbinview(const ArrayView& node, const DTypePtr& t, uint64_t len,
                                  std::span<const uint64_t> rows, DecodeContext& ctx) {
  OC_TRY(check_node(node, t, len));
  int64_t nulls = 0;
  OC_ASSIGN_OR_RETURN(Buffer validity,
                      take_validity(node, 0, t->storage().nullable, len, rows, ctx, nulls));
  return take_views(
      node, t, rows.size(), [&](uint64_t i) { return rows[i]; }, std::move(validity), nulls, ctx);
}

}  // namespace

void register_varbinview() {
  register_encoding("vortex.varbinview", decode_varbinview);
  register_take("vortex.varbinview", take_varbinview);
}

}  // namespace oc::format::encodings
