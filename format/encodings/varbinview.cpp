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
// Output: Arrow utf8/binary (i32 offsets + one bytes buffer), so the values are copied. Views of
// null rows are not read. UTF-8 is not validated. A take reads only its rows' views, and of
// the data buffers only its rows' values.
#include <cstring>

#include "format/decode.hpp"
#include "format/encodings/registry.hpp"

namespace oc::format::encodings {
namespace {

constexpr size_t kViewSize = 16;
constexpr uint32_t kMaxInlined = 12;

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
  OC_EXPECT(views.size() / kViewSize == len && views.size() % kViewSize == 0, corrupt,
            "varbinview views buffer is {} bytes, expected {} views of 16", views.size(), len);
  return {};
}

// Copies the values of views row_of(0), ..., row_of(n - 1) into an Arrow column of n rows;
// @p validity (n bits, or empty) says which output rows are valid, and their views alone are read.
template <class RowOf>
Result<ColumnPtr> gather_views(const ArrayView& node, const DTypePtr& t, uint64_t n, RowOf row_of,
                               Buffer validity, int64_t nulls, DecodeContext& ctx) {
  const Buffer& views = node.buffers.back();
  const size_t num_data = node.buffers.size() - 1;
  auto is_valid = [&](uint64_t i) { return validity.empty() || bitmap_get(validity.data(), i); };

  // Pass 1: check every view that is read and size the output.
  for (uint64_t i = 0; ctx.reads_in_part() && i < n; ++i) {
    if (is_valid(i)) ctx.need(views, row_of(i) * kViewSize, kViewSize);
  }
  uint64_t total = 0;
  for (uint64_t i = 0; i < n; ++i) {
    if (!is_valid(i)) continue;
    const uint64_t row = row_of(i);
    const uint8_t* view = views.data() + row * kViewSize;
    const uint32_t size = load_le<uint32_t>(view);
    if (size > kMaxInlined) {
      const uint32_t buffer_index = load_le<uint32_t>(view + 8);
      const uint32_t offset = load_le<uint32_t>(view + 12);
      OC_EXPECT(buffer_index < num_data, corrupt, "varbinview row {} names data buffer {} of {}",
                row, buffer_index, num_data);
      OC_EXPECT(uint64_t{offset} + size <= node.buffers[buffer_index].size(), corrupt,
                "varbinview row {} reads bytes [{}, {}) of a {}-byte buffer", row, offset,
                uint64_t{offset} + size, node.buffers[buffer_index].size());
    }
    total += size;
  }
  OC_EXPECT(total <= INT32_MAX, unsupported,
            "varbinview column of {} bytes exceeds Arrow's 2 GiB i32 offsets", total);
  OC_TRY(ctx.check_alloc(saturating_add(total, saturating_mul(saturating_add(n, 1), sizeof(int32_t))), "varbinview values"));
  for (uint64_t i = 0; ctx.reads_in_part() && i < n; ++i) {  // the strings the views point at
    if (!is_valid(i)) continue;
    const uint8_t* view = views.data() + row_of(i) * kViewSize;
    const uint32_t size = load_le<uint32_t>(view);
    if (size > kMaxInlined) ctx.need(node.buffers[load_le<uint32_t>(view + 8)], load_le<uint32_t>(view + 12), size);
  }

  // Pass 2: gather.
  // Every offset and byte is written. kMaxInlined bytes of scratch past the end let an inlined
  // value be copied as one fixed-size block, whatever its size.
  Buffer offsets = Buffer::allocate_array_for_overwrite(n + 1, sizeof(int32_t));
  Buffer bytes = Buffer::allocate_for_overwrite(total + kMaxInlined).slice(0, total);
  int32_t* out_offsets = offsets.mutable_as<int32_t>();
  uint8_t* out = bytes.mutable_data();
  int32_t pos = 0;
  for (uint64_t i = 0; i < n; ++i) {
    out_offsets[i] = pos;
    if (!is_valid(i)) continue;
    const uint8_t* view = views.data() + row_of(i) * kViewSize;
    const uint32_t size = load_le<uint32_t>(view);
    if (size <= kMaxInlined) {
      std::memcpy(out + pos, view + 4, kMaxInlined);
    } else {
      const uint8_t* src = node.buffers[load_le<uint32_t>(view + 8)].data() + load_le<uint32_t>(view + 12);
      std::memcpy(out + pos, src, size);
    }
    pos += static_cast<int32_t>(size);
  }
  out_offsets[n] = pos;

  auto c = std::make_shared<Column>();
  c->dtype = t;
  c->length = n;
  c->validity = std::move(validity);
  c->null_count = nulls;
  c->buffers.push_back(std::move(offsets));
  c->buffers.push_back(std::move(bytes));
  return ColumnPtr(std::move(c));
}

Result<ColumnPtr> decode_varbinview(const ArrayView& node, const DTypePtr& t, uint64_t len,
                                    DecodeContext& ctx) {
  OC_TRY(check_node(node, t, len));
  int64_t nulls = 0;
  OC_ASSIGN_OR_RETURN(Buffer validity,
                      decode_validity(node, 0, t->storage().nullable, len, ctx, nulls));
  return gather_views(node, t, len, [](uint64_t i) { return i; }, std::move(validity), nulls, ctx);
}

Result<ColumnPtr> take_varbinview(const ArrayView& node, const DTypePtr& t, uint64_t len,
                                  std::span<const uint64_t> rows, DecodeContext& ctx) {
  OC_TRY(check_node(node, t, len));
  int64_t nulls = 0;
  OC_ASSIGN_OR_RETURN(Buffer validity,
                      take_validity(node, 0, t->storage().nullable, len, rows, ctx, nulls));
  return gather_views(node, t, rows.size(), [&](uint64_t i) { return rows[i]; },
                      std::move(validity), nulls, ctx);
}

}  // namespace

void register_varbinview() {
  register_encoding("vortex.varbinview", decode_varbinview);
  register_take("vortex.varbinview", take_varbinview);
}

}  // namespace oc::format::encodings
