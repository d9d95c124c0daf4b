// SPDX-License-Identifier: Apache-2.0
// fastlanes.delta: integers stored as running differences along the lanes of FastLanes chunks.
//   dtype:     any integer ptype; signed values decode through their unsigned bits with a
//              wrapping add, which inverts the writer's wrapping subtract.
//   metadata:  `DeltaMetadata { uint64 deltas_len = 1; uint32 offset = 2 }`
//              (format/proto/delta.proto); offset < 1024 rows of chunk 0 precede row 0, and
//              offset + len <= deltas_len.
//   children:  0 = bases: deltas_len / 1024 x L values (L = 1024 / bits of the type, the lane
//                  count), the array's ptype; chunk c's lane l starts from bases[c x L + l];
//              1 = deltas: deltas_len values (a multiple of 1024: the last chunk is padded), the
//                  array's ptype and nullability; it carries the validity.
//   Chunk layout (vortex >= 0.65, `encodings/fastlanes/src/delta/`): the writer transposes each
//   chunk with the fastlanes crate's `Transpose` (transposed[i] = chunk[fl_transpose(i)]), then
//   along lane l takes the rows r = 0..bits-1 at transposed position fastlanes_index(r, l)
//   (format/encodings/bitpacked.hpp) and stores delta = value - previous, the previous of row 0
//   being the lane's base (so row 0's delta is 0). Decoding is a per-lane prefix sum from the
//   base, then untranspose: chunk[fl_transpose(i)] = transposed[i].
//   The deltas' validity is transposed too, but by the bit transpose of
//   `bit_transpose::transpose_validity`, whose direction is the opposite one: logical row p of a
//   chunk is valid iff bit fl_transpose(p) of the chunk's stored validity is set.
// Writers before vortex 0.65 stored the last partial chunk unpadded (deltas_len = rows, one extra
// base) and the validity untransposed; upstream 0.65+ rejects a deltas_len that is not a multiple
// of 1024, and so does this reader (`Errc::corrupt`).
// A slice decodes only the chunks that hold its rows (and asks its children for just those); a
// take asks the children for each row's lane base and the lane's deltas up to that row.
#include <algorithm>
#include <cstring>

#include "format/decode.hpp"
#include "format/encodings/bitpacked.hpp"
#include "format/encodings/registry.hpp"
#include "format/proto/delta.pb.h"

namespace oc::format::encodings {
namespace {

constexpr uint64_t kChunk = kFastLanesBlock;

// The fastlanes crate's `transpose(idx)`: where the value at transposed position @p i sits in the
// chunk. Its bits [row:3][order:3][lane:4] become [lane:4][kTransposedOrder[order]:3][row:3].
constexpr unsigned fl_transpose(unsigned i) noexcept {
  return (i % 16) * 64 + kTransposedOrder[(i / 16) % 8] * 8 + i / 128;
}
// The inverse of `fl_transpose` (kTransposedOrder is its own inverse).
constexpr unsigned fl_untranspose(unsigned p) noexcept {
  return (p % 8) * 128 + kTransposedOrder[(p / 8) % 8] * 16 + p / 64;
}
static_assert([] {
  for (unsigned i = 0; i < kChunk; ++i) {
    if (fl_untranspose(fl_transpose(i)) != i || fl_transpose(i) >= kChunk) return false;
  }
  return true;
}());

// A fastlanes.delta node's shape and metadata, checked against its dtype and length.
struct Checked {
  uint64_t deltas_len = 0;
  uint64_t offset = 0;
  size_t width = 0;     // bytes of one value
  unsigned lanes = 0;   // bases per chunk
  DTypePtr child_type;  // of both children: the array's ptype and nullability
};

Result<Checked> checked(const ArrayView& node, const DTypePtr& t, uint64_t len,
                        DecodeContext& ctx) {
  OC_TRY(expect_shape(node, 0, 2, 2));
  const DType& storage = t->storage();
  OC_EXPECT(storage.kind == TypeKind::primitive && !ptype_is_float(storage.ptype), corrupt,
            "fastlanes.delta for {}, expected an integer type", t->to_string());
  OC_ASSIGN_OR_RETURN(auto meta,
                      parse_metadata<pb::DeltaMetadata>(node.metadata, "fastlanes.delta"));
  Checked k;
  k.deltas_len = meta.deltas_len();
  k.offset = meta.offset();
  k.width = ptype_width(storage.ptype);
  k.lanes = static_cast<unsigned>(kChunk / (k.width * 8));
  OC_EXPECT(k.offset < kChunk, corrupt, "fastlanes.delta offset {} >= 1024", k.offset);
  OC_EXPECT(k.deltas_len % kChunk == 0, corrupt,
            "fastlanes.delta has {} deltas, not whole chunks of 1024 (the unpadded layout of "
            "writers before vortex 0.65 is not read)",
            k.deltas_len);
  OC_EXPECT(k.deltas_len >= k.offset && len <= k.deltas_len - k.offset, corrupt,
            "fastlanes.delta rows {} + {} exceed {} deltas", k.offset, len, k.deltas_len);
  // Bounds both children (the bases are fewer than the deltas) before any is decoded.
  OC_TRY(ctx.check_alloc(k.deltas_len, k.width, "fastlanes.delta"));
  k.child_type = DType::make_primitive(storage.ptype, storage.nullable);
  return k;
}

// Bits of row @p i of the fixed-width column @p c, @p width bytes wide, zero-extended.
uint64_t bits_at(const Column& c, uint64_t i, size_t width) noexcept {
  uint64_t v = 0;
  std::memcpy(&v, c.buffers[0].data() + (c.offset + i) * width, width);  // little endian
  return v;
}

// Decodes @p chunks whole chunks: @p bases holds chunks x L values, @p deltas chunks x 1024.
template <class U>
void undelta_chunks(const Column& bases, const Column& deltas, uint64_t chunks, U* out) {
  constexpr unsigned kBits = sizeof(U) * 8;
  constexpr unsigned kLanes = kChunk / kBits;
  const U* base = bases.values<U>();
  const U* delta = deltas.values<U>();
  for (uint64_t c = 0; c < chunks; ++c) {
    U acc[kLanes];
    std::memcpy(acc, base + c * kLanes, sizeof(acc));
    const U* in = delta + c * kChunk;
    U* dst = out + c * kChunk;
    // Row by row, every lane at once: the loads are contiguous, the stores scatter.
    for (unsigned row = 0; row < kBits; ++row) {
      const unsigned first = fastlanes_index(row, 0);
      for (unsigned lane = 0; lane < kLanes; ++lane) {
        acc[lane] = static_cast<U>(acc[lane] + in[first + lane]);
        dst[fl_transpose(first + lane)] = acc[lane];
      }
    }
  }
}

// Sets the validity of @p c, rows [0, c.length) at chunk positions c.offset + row of @p deltas
// (decoded from a chunk boundary), from the deltas' transposed validity.
void untranspose_validity(const Column& deltas, Column& c) {
  if (deltas.null_count == 0) return;
  // Bits from the column's offset, like its values: bit c.offset + r is row r.
  Buffer bits = make_bitmap(c.offset + c.length, true);
  for (uint64_t p = c.offset; p < c.offset + c.length; ++p) {
    const uint64_t stored = p - p % kChunk + fl_transpose(static_cast<unsigned>(p % kChunk));
    if (!deltas.is_valid(stored)) bitmap_set(bits.mutable_data(), p, false);
  }
  c.null_count = count_nulls(bits.data(), c.offset, c.length);
  if (c.null_count != 0) c.validity = std::move(bits);
}

Result<ColumnPtr> decode_delta(const ArrayView& node, const DTypePtr& t, uint64_t len,
                               DecodeContext& ctx) {
  OC_ASSIGN_OR_RETURN(Checked k, checked(node, t, len, ctx));
  // A slice decode undeltas only the chunks that hold the window's rows.
  const RowWindow rows = ctx.window().value_or(RowWindow{0, len});
  const uint64_t first = (k.offset + rows.begin) / kChunk;
  const uint64_t end = rows.size() == 0 ? first : (k.offset + rows.end + kChunk - 1) / kChunk;
  const uint64_t chunks = end - first;

  auto c = std::make_shared<Column>();
  c->dtype = t;
  c->length = rows.size();
  c->offset = chunks == 0 ? 0 : k.offset + rows.begin - first * kChunk;
  Buffer out = Buffer::allocate_array_for_overwrite(chunks * kChunk, k.width);
  if (chunks > 0) {
    OC_ASSIGN_OR_RETURN(
        ColumnPtr bases,
        ctx.decode_slice(node.children[0], k.child_type, k.deltas_len / kChunk * k.lanes,
                         RowWindow{first * k.lanes, end * k.lanes}));
    OC_ASSIGN_OR_RETURN(ColumnPtr deltas,
                        ctx.decode_slice(node.children[1], k.child_type, k.deltas_len,
                                         RowWindow{first * kChunk, end * kChunk}));
    switch (k.width) {
      case 1:
        undelta_chunks(*bases, *deltas, chunks, out.mutable_as<uint8_t>());
        break;
      case 2:
        undelta_chunks(*bases, *deltas, chunks, out.mutable_as<uint16_t>());
        break;
      case 4:
        undelta_chunks(*bases, *deltas, chunks, out.mutable_as<uint32_t>());
        break;
      default:
        undelta_chunks(*bases, *deltas, chunks, out.mutable_as<uint64_t>());
        break;
    }
    if (t->storage().nullable) untranspose_validity(*deltas, *c);
  }
  c->buffers.push_back(std::move(out));
  return ColumnPtr(std::move(c));
}

// Where row @p row of a checked node lives: its chunk, its position in the chunk, and the lane
// and lane row that hold its delta (fastlanes_index(lane_row, lane) = fl_untranspose(position)).
struct Slot {
  uint64_t chunk;
  unsigned position, lane, lane_row;
};

Slot locate(const Checked& k, uint64_t row) noexcept {
  Slot s;
  s.chunk = (k.offset + row) / kChunk;
  s.position = static_cast<unsigned>((k.offset + row) % kChunk);
  const unsigned i = fl_untranspose(s.position);
  // fastlanes_index(r, l) = kTransposedOrder[r / 8] x 16 + (r % 8) x 128 + l, where the first
  // term is a multiple of the lane count.
  s.lane = i % k.lanes;
  s.lane_row = kTransposedOrder[(i % 128 - s.lane) / 16] * 8 + i / 128;
  return s;
}

// Index of @p value in the sorted @p sorted, which holds it.
size_t index_of(const std::vector<uint64_t>& sorted, uint64_t value) noexcept {
  return static_cast<size_t>(std::lower_bound(sorted.begin(), sorted.end(), value) -
                             sorted.begin());
}

Result<ColumnPtr> take_delta(const ArrayView& node, const DTypePtr& t, uint64_t len,
                             std::span<const uint64_t> rows, DecodeContext& ctx) {
  OC_ASSIGN_OR_RETURN(Checked k, checked(node, t, len, ctx));
  const bool nullable = t->storage().nullable;
  auto c = std::make_shared<Column>();
  c->dtype = t;
  c->length = rows.size();
  Buffer out = Buffer::allocate_array(rows.size(), k.width);
  if (rows.empty()) {
    c->buffers.push_back(std::move(out));
    return ColumnPtr(std::move(c));
  }
  // A row is its lane's base plus the lane's deltas up to the row's own: those, and the bit of
  // its validity, are all the children are asked for.
  const unsigned bits = static_cast<unsigned>(k.width * 8);
  std::vector<uint64_t> base_rows, delta_rows;
  base_rows.reserve(rows.size());
  delta_rows.reserve(rows.size() * (bits / 2 + 1));
  for (const uint64_t row : rows) {
    const Slot s = locate(k, row);
    base_rows.push_back(s.chunk * k.lanes + s.lane);
    for (unsigned r = 0; r <= s.lane_row; ++r) {
      delta_rows.push_back(s.chunk * kChunk + fastlanes_index(r, s.lane));
    }
    if (nullable) delta_rows.push_back(s.chunk * kChunk + fl_transpose(s.position));
  }
  std::sort(base_rows.begin(), base_rows.end());
  base_rows.erase(std::unique(base_rows.begin(), base_rows.end()), base_rows.end());
  std::sort(delta_rows.begin(), delta_rows.end());
  delta_rows.erase(std::unique(delta_rows.begin(), delta_rows.end()), delta_rows.end());
  OC_ASSIGN_OR_RETURN(ColumnPtr bases, ctx.decode_take(node.children[0], k.child_type,
                                                       k.deltas_len / kChunk * k.lanes, base_rows));
  OC_ASSIGN_OR_RETURN(ColumnPtr deltas,
                      ctx.decode_take(node.children[1], k.child_type, k.deltas_len, delta_rows));

  Buffer validity = nullable && deltas->null_count != 0 ? make_bitmap(rows.size(), true) : Buffer();
  for (size_t n = 0; n < rows.size(); ++n) {
    const Slot s = locate(k, rows[n]);
    // Summed in 64 bits and cut to the value's width: the same as wrapping in that width.
    uint64_t acc = bits_at(*bases, index_of(base_rows, s.chunk * k.lanes + s.lane), k.width);
    for (unsigned r = 0; r <= s.lane_row; ++r) {
      acc += bits_at(*deltas, index_of(delta_rows, s.chunk * kChunk + fastlanes_index(r, s.lane)),
                     k.width);
    }
    std::memcpy(out.mutable_data() + n * k.width, &acc, k.width);  // little endian
    if (!validity.empty() &&
        !deltas->is_valid(index_of(delta_rows, s.chunk * kChunk + fl_transpose(s.position)))) {
      bitmap_set(validity.mutable_data(), n, false);
    }
  }
  c->buffers.push_back(std::move(out));
  if (!validity.empty()) {
    c->null_count = count_nulls(validity.data(), 0, rows.size());
    if (c->null_count != 0) c->validity = std::move(validity);
  }
  return ColumnPtr(std::move(c));
}

}  // namespace

void register_delta() {
  register_encoding("fastlanes.delta", decode_delta, /*window_aware=*/true);
  register_take("fastlanes.delta", take_delta);
}

}  // namespace oc::format::encodings
