// SPDX-License-Identifier: Apache-2.0
// vortex.fsst: strings and binary compressed with FSST (decompression in
// format/encodings/fsst.hpp).
//
//   metadata: FsstMetadata { uncompressed_lengths_ptype = 1, codes_offsets_ptype = 2 }
//             (format/proto/fsst.proto)
//
// Current form (3 buffers):
//   buffers:  [symbols: n x u64 LE (n <= 255), symbol_lengths: n x u8 (each 1..8), codes bytes]
//   children: [uncompressed_lengths: len non-nullable integers,
//              codes_offsets: len + 1 non-nullable integers of codes_offsets_ptype,
//              validity (optional)]
//
// Legacy form (2 buffers; files from before the codes bytes moved into the FSST node):
//   buffers:  [symbols, symbol_lengths]
//   children: [codes: a vortex.varbin binary array of len rows, nullable as the dtype is, whose
//              validity is the array's (vortex-data refuses any other encoding here);
//              uncompressed_lengths]
//
// Row i decompresses codes[offsets[i], offsets[i + 1]) to exactly uncompressed_lengths[i] bytes.
// Null rows have empty codes and length 0 as written, and are decoded like any other row.
//
// Output: Arrow utf8/binary. UTF-8 is not validated.
//
// A take decompresses only its rows: it takes their lengths, validity and codes offsets (row
// and row + 1 of each) from the children, or their codes from the legacy codes child.
#include "format/encodings/fsst.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <optional>
#include <vector>

#include "format/decode.hpp"
#include "format/encodings/fsst_table.hpp"
#include "format/encodings/integers.hpp"
#include "format/encodings/registry.hpp"
#include "format/parallel.hpp"
#include "format/proto/fsst.pb.h"
#include "format/string_views.hpp"

namespace oc::format::encodings {
namespace {

// The compressed side of an FSST array, from either form.
struct Codes {
  Buffer bytes;
  std::vector<uint64_t> offsets;  // len + 1
  Buffer validity;
  int64_t null_count = 0;
};

Result<Codes> current_codes(const ArrayView& node, const pb::FsstMetadata& meta, bool nullable,
                            uint64_t len, DecodeContext& ctx) {
  OC_TRY(expect_shape(node, 3, 2, 3));
  OC_ASSIGN_OR_RETURN(PType ptype, integer_ptype(meta.codes_offsets_ptype(), "fsst codes offsets"));
  OC_EXPECT(len < UINT64_MAX, corrupt, "fsst length {} has no room for offsets", len);
  Codes codes;
  codes.bytes = node.buffers[2];
  OC_ASSIGN_OR_RETURN(codes.offsets,
                      decode_unsigned_child(node, 1, ptype, len + 1, ctx, "fsst codes offsets"));
  OC_ASSIGN_OR_RETURN(codes.validity,
                      decode_validity(node, 2, nullable, len, ctx, codes.null_count));
  return codes;
}

// Checks the shape of a legacy (2-buffer) vortex.fsst node: vortex-data reads its codes child
// as a VarBinArray and refuses any other encoding there.
Result<void> check_legacy_shape(const ArrayView& node) {
  OC_TRY(expect_shape(node, 2, 2, 2));
  OC_EXPECT(node.children[0].encoding == "vortex.varbin", corrupt,
            "legacy vortex.fsst (2 buffers) has a {} codes child, expected vortex.varbin",
            node.children[0].encoding);
  return {};
}

Result<Codes> legacy_codes(const ArrayView& node, bool nullable, uint64_t len, DecodeContext& ctx) {
  OC_TRY(check_legacy_shape(node));
  OC_ASSIGN_OR_RETURN(ColumnPtr decoded,
                      ctx.decode(node.children[0], DType::make_binary(nullable), len));
  OC_ASSIGN_OR_RETURN(ColumnPtr offsets, string_offsets(decoded));
  OC_ASSIGN_OR_RETURN(ColumnPtr column, compact(offsets));
  OC_TRY(ctx.check_alloc(len + 1, sizeof(uint64_t), "fsst codes offsets"));
  Codes codes;
  codes.bytes = column->buffers[1];
  codes.offsets.assign(column->offsets(), column->offsets() + len + 1);
  codes.validity = column->validity;
  codes.null_count = column->null_count;
  return codes;
}

// What one slice of decompress_rows reads and writes, copied into locals by the loops that use
// it: reached through a reference, the compiler reloads every field after each byte stored.
struct RowsIn {
  const uint64_t* symbols;
  const uint8_t* symbol_lengths;
  size_t num_symbols;
  const uint8_t* codes;
  const uint64_t* begins;
  const uint64_t* ends;
  const uint64_t* lengths;
  const int32_t* at;  // row i's bytes start at out + at[i]; at[n] is the total
  uint8_t* out;
  uint64_t limit;  // out + limit is the end of what this slice may write
};

// Rows decompressed in one pass over their codes, and the codes such a pass may cover (its
// scratch of output positions stays within L2).
constexpr uint64_t kBlockRows = 256;
constexpr uint64_t kBlockCodes = 16384;
// The output position recorded for an escaped literal: a row that begins there is cut inside
// an escape.
constexpr uint32_t kInsideEscape = UINT32_MAX;

// Decompresses rows [first, last) in one loop over all their codes, when those lie back to
// back (row i + 1's begin is row i's end): no branch per row to mispredict. It records the
// output position before every code in @p pos and then checks that each row ends where its
// length says and not inside an escape, so the bytes equal those of decoding row by row.
// @return false when they might not (an unknown code, a dangling escape, a row of another
// length, no room for a word store, or codes not back to back): nothing is reported here, the
// caller decodes the rows again one by one, which reports the row at fault. Writes stay in
// [out + at[first], out + limit).
bool decompress_block(const RowsIn& in, uint64_t first, uint64_t last, std::vector<uint32_t>& pos) {
  const uint64_t* begins = in.begins;
  const uint64_t* ends = in.ends;
  for (uint64_t i = first; i + 1 < last; ++i) {
    if (ends[i] != begins[i + 1]) return false;
  }
  const uint64_t begin = begins[first];
  const uint64_t n = ends[last - 1] - begin;
  const auto base = static_cast<uint64_t>(in.at[first]);
  if (n > kBlockCodes || in.limit - base < sizeof(uint64_t)) return false;
  if (pos.size() < n + 1) pos.resize(n + 1);
  const uint64_t* symbols = in.symbols;
  const uint8_t* symbol_lengths = in.symbol_lengths;
  const size_t num_symbols = in.num_symbols;
  const uint8_t* codes = in.codes + begin;
  uint8_t* out = in.out + base;
  uint32_t* p = pos.data();
  const uint64_t last_word = in.limit - base - sizeof(uint64_t);  // the last word store's start
  uint64_t w = 0, k = 0;
  while (k < n) {
    if (w > last_word) return false;
    const uint8_t code = codes[k];
    p[k] = static_cast<uint32_t>(w);
    if (code < num_symbols) {
      std::memcpy(out + w, &symbols[code], sizeof(uint64_t));  // little-endian hosts only
      w += symbol_lengths[code];
      ++k;
    } else if (code == fsst::kEscapeCode && k + 1 < n) {
      out[w++] = codes[k + 1];
      p[k + 1] = kInsideEscape;
      k += 2;
    } else {
      return false;
    }
  }
  p[n] = static_cast<uint32_t>(w);
  const int32_t* at = in.at;
  bool ok = true;
  for (uint64_t i = first; i < last; ++i)
    ok &= p[ends[i] - begin] == static_cast<uint64_t>(at[i + 1]) - base;
  return ok;
}

// Decompresses rows [first, last) one at a time, each to exactly its length.
Result<void> decompress_each(const RowsIn& in, uint64_t first, uint64_t last) {
  const uint64_t* symbols = in.symbols;
  const uint8_t* symbol_lengths = in.symbol_lengths;
  const size_t num_symbols = in.num_symbols;
  const uint8_t* codes = in.codes;
  const uint64_t* begins = in.begins;
  const uint64_t* ends = in.ends;
  const uint64_t* lengths = in.lengths;
  const int32_t* at = in.at;
  uint8_t* out = in.out;
  const uint64_t limit = in.limit;
  for (uint64_t i = first; i < last; ++i) {
    const auto a = static_cast<uint64_t>(at[i]);
    const auto r = fsst::decompress(symbols, symbol_lengths, num_symbols, codes + begins[i],
                                    ends[i] - begins[i], out + a, lengths[i], limit - a);
    if (r.status != fsst::DecodeStatus::ok) {
      return OC_ERROR(Errc::corrupt, "fsst row {} stops after {} of its {} bytes: {}", i, r.written,
                      lengths[i], fsst::describe(r.status));
    }
    if (r.written != lengths[i]) {
      return OC_ERROR(Errc::corrupt, "fsst row {} decompresses to {} bytes, expected {}", i,
                      r.written, lengths[i]);
    }
  }
  return {};
}

// Decompresses row i = 0..n-1 from codes [begins[i], ends[i]) of @p code_bytes to exactly
// lengths[i] bytes, into an Arrow column of n rows with @p validity (n bits from 0, or empty),
// in the layout the context asks for. The values lie back to back either way; views are
// written by each slice right after it decompressed a block of rows, while they are in cache.
Result<ColumnPtr> decompress_rows(const fsst::SymbolTable& table, const Buffer& code_bytes,
                                  std::span<const uint64_t> begins, std::span<const uint64_t> ends,
                                  std::span<const uint64_t> lengths, Buffer validity,
                                  int64_t null_count, const DTypePtr& t, DecodeContext& ctx) {
  const uint64_t n = lengths.size();
  for (uint64_t i = 0; i < n; ++i) {
    OC_EXPECT(begins[i] <= ends[i] && ends[i] <= code_bytes.size(), corrupt,
              "fsst row {} has codes [{}, {}) of {} code bytes", i, begins[i], ends[i],
              code_bytes.size());
  }
  OC_ASSIGN_OR_RETURN(const uint64_t total, fsst::total_row_bytes(lengths));
  const bool views = ctx.strings() == StringLayout::views;
  const uint64_t per_row = views ? kViewBytes : sizeof(int32_t);
  OC_TRY(ctx.check_alloc(saturating_add(total, saturating_mul(n + 1, per_row)), "fsst values"));

  // Views need the offsets only while they are written.
  std::vector<int32_t> starts;
  Buffer offsets, view_buffer;
  if (views) {
    starts.resize(n + 1);
    view_buffer = Buffer::allocate_array_for_overwrite(n, kViewBytes);
  } else {
    offsets = Buffer::allocate_array_for_overwrite(n + 1, sizeof(int32_t));
  }
  // 8 bytes of scratch past the end let every symbol be stored as one word (fsst::decompress).
  const uint64_t readable = total + sizeof(uint64_t);
  Buffer bytes = Buffer::allocate_for_overwrite(readable).slice(0, total);
  int32_t* out_offsets = views ? starts.data() : offsets.mutable_as<int32_t>();
  uint64_t pos = 0;
  for (uint64_t i = 0; i < n; ++i) {
    out_offsets[i] = static_cast<int32_t>(pos);
    pos += lengths[i];
  }
  out_offsets[n] = static_cast<int32_t>(pos);
  // Every row's place is known from the lengths, so slices of rows decompress side by side.
  // A slice may write its symbol words past its own end only when it is the last one.
  const size_t slices =
      std::max<size_t>(1, std::min<size_t>(decode_threads(), n / kParallelFromRows));
  std::vector<uint8_t> any_long(slices, 0);
  OC_TRY(parallel_for(slices, n, [&](size_t s) -> Result<void> {
    const uint64_t first = n * s / slices, last = n * (s + 1) / slices;
    const RowsIn in{table.symbols.data(),
                    table.lengths.data(),
                    table.size,
                    code_bytes.data(),
                    begins.data(),
                    ends.data(),
                    lengths.data(),
                    out_offsets,
                    bytes.mutable_data(),
                    s + 1 == slices ? readable : static_cast<uint64_t>(out_offsets[last])};
    uint8_t* view_out = views ? view_buffer.mutable_data() : nullptr;
    const uint8_t* valid = validity.empty() ? nullptr : validity.data();
    std::vector<uint32_t> code_at;  // decompress_block's scratch
    bool long_values = false;
    for (uint64_t b = first; b < last; b += kBlockRows) {
      const uint64_t e = std::min(last, b + kBlockRows);
      if (!decompress_block(in, b, e, code_at)) OC_TRY(decompress_each(in, b, e));
      if (view_out == nullptr) continue;
      // The block's views while its bytes are in cache. Reads stay within the slice (or the
      // scratch, for the last one): the next slice's bytes may be being written.
      const uint8_t* out = in.out;
      const uint64_t limit = in.limit;
      for (uint64_t i = b; i < e; ++i) {
        uint8_t* v = view_out + i * kViewBytes;
        if (valid != nullptr && !bitmap_get(valid, i)) {
          std::memset(v, 0, kViewBytes);
        } else {
          long_values |= store_view_at(v, out, limit, static_cast<uint32_t>(out_offsets[i]),
                                       static_cast<uint32_t>(out_offsets[i + 1] - out_offsets[i]));
        }
      }
    }
    any_long[s] = long_values;
    return {};
  }));

  auto c = std::make_shared<Column>();
  c->dtype = t;
  c->length = n;
  c->validity = std::move(validity);
  c->null_count = null_count;
  if (views) {
    std::vector<Buffer> data;
    if (std::find(any_long.begin(), any_long.end(), 1) != any_long.end())
      data.push_back(std::move(bytes));
    c->buffers = view_buffers(std::move(view_buffer), std::move(data));
    c->string_views = true;
  } else {
    c->buffers.push_back(std::move(offsets));
    c->buffers.push_back(std::move(bytes));
  }
  return ColumnPtr(std::move(c));
}

// The checked metadata and symbol table of a vortex.fsst node of dtype @p t.
struct FsstNode {
  pb::FsstMetadata meta;
  fsst::SymbolTable table;
  bool legacy = false;
};

Result<FsstNode> parse_fsst(const ArrayView& node, const DTypePtr& t) {
  const DType& st = t->storage();
  OC_EXPECT(st.kind == TypeKind::utf8 || st.kind == TypeKind::binary, corrupt, "vortex.fsst for {}",
            t->to_string());
  OC_EXPECT(node.buffers.size() == 2 || node.buffers.size() == 3, corrupt,
            "vortex.fsst has {} buffers, expected 3 (or 2 in the legacy form)",
            node.buffers.size());
  FsstNode out;
  OC_ASSIGN_OR_RETURN(out.meta, parse_metadata<pb::FsstMetadata>(node.metadata, "vortex.fsst"));
  OC_ASSIGN_OR_RETURN(out.table, fsst::parse_symbol_table(node.buffers[0], node.buffers[1]));
  out.legacy = node.buffers.size() == 2;
  return out;
}

Result<ColumnPtr> decode_fsst(const ArrayView& node, const DTypePtr& t, uint64_t len,
                              DecodeContext& ctx) {
  OC_ASSIGN_OR_RETURN(FsstNode f, parse_fsst(node, t));
  const bool nullable = t->storage().nullable;
  Codes codes;
  if (f.legacy) {
    OC_ASSIGN_OR_RETURN(codes, legacy_codes(node, nullable, len, ctx));
  } else {
    OC_ASSIGN_OR_RETURN(codes, current_codes(node, f.meta, nullable, len, ctx));
  }
  for (uint64_t i = 0; i < len; ++i) {
    OC_EXPECT(codes.offsets[i] <= codes.offsets[i + 1], corrupt,
              "fsst codes offsets decrease at row {}: {} > {}", i, codes.offsets[i],
              codes.offsets[i + 1]);
  }
  OC_EXPECT(codes.offsets[len] <= codes.bytes.size(), corrupt,
            "fsst codes offsets end at {} past {} code bytes", codes.offsets[len],
            codes.bytes.size());

  OC_ASSIGN_OR_RETURN(PType lengths_ptype, integer_ptype(f.meta.uncompressed_lengths_ptype(),
                                                         "fsst uncompressed lengths"));
  OC_ASSIGN_OR_RETURN(auto lengths, decode_unsigned_child(node, f.legacy ? 1 : 0, lengths_ptype,
                                                          len, ctx, "fsst uncompressed lengths"));
  const std::span<const uint64_t> offsets(codes.offsets);
  return decompress_rows(f.table, codes.bytes, offsets.first(len), offsets.subspan(1), lengths,
                         std::move(codes.validity), codes.null_count, t, ctx);
}

// Takes rows @p rows of the integer child @p index (of @p len rows) of @p node, as u64.
Result<std::vector<uint64_t>> take_unsigned_child(const ArrayView& node, size_t index, PType ptype,
                                                  uint64_t len, std::span<const uint64_t> rows,
                                                  DecodeContext& ctx, std::string_view what) {
  OC_EXPECT(index < node.children.size(), corrupt, "{} has no {} child", node.encoding, what);
  OC_ASSIGN_OR_RETURN(ColumnPtr c, ctx.decode_take(node.children[index],
                                                   DType::make_primitive(ptype, false), len, rows));
  return unsigned_rows(*c, what);
}

Result<ColumnPtr> take_fsst(const ArrayView& node, const DTypePtr& t, uint64_t len,
                            std::span<const uint64_t> rows, DecodeContext& ctx) {
  for (size_t b = 0; b < std::min<size_t>(node.buffers.size(), 2); ++b)
    ctx.need(node.buffers[b]);  // the symbol table
  OC_ASSIGN_OR_RETURN(FsstNode f, parse_fsst(node, t));
  const bool nullable = t->storage().nullable;
  const uint64_t n = rows.size();
  Buffer code_bytes, validity;
  int64_t null_count = 0;
  std::vector<uint64_t> begins(n), ends(n);
  if (f.legacy) {
    OC_TRY(check_legacy_shape(node));
    OC_ASSIGN_OR_RETURN(ColumnPtr taken,
                        ctx.decode_take(node.children[0], DType::make_binary(nullable), len, rows));
    OC_ASSIGN_OR_RETURN(ColumnPtr offsets, string_offsets(taken));
    OC_ASSIGN_OR_RETURN(ColumnPtr column, compact(offsets));
    code_bytes = column->buffers[1];
    for (uint64_t i = 0; i < n; ++i) {
      begins[i] = static_cast<uint64_t>(column->offsets()[i]);
      ends[i] = static_cast<uint64_t>(column->offsets()[i + 1]);
    }
    validity = column->validity;
    null_count = column->null_count;
  } else {
    OC_TRY(expect_shape(node, 3, 2, 3));
    OC_EXPECT(len < UINT64_MAX, corrupt, "fsst length {} has no room for offsets", len);
    OC_ASSIGN_OR_RETURN(PType ptype,
                        integer_ptype(f.meta.codes_offsets_ptype(), "fsst codes offsets"));
    // Row r's codes are [offsets[r], offsets[r + 1]): take both ends of every row, once each.
    std::vector<uint64_t> bounds;
    bounds.reserve(2 * n);
    for (uint64_t r : rows) {
      if (bounds.empty() || bounds.back() != r) bounds.push_back(r);
      bounds.push_back(r + 1);
    }
    OC_ASSIGN_OR_RETURN(
        auto at, take_unsigned_child(node, 1, ptype, len + 1, bounds, ctx, "fsst codes offsets"));
    for (uint64_t i = 0, k = 0; i < n; ++i) {
      while (bounds[k] != rows[i]) ++k;
      begins[i] = at[k];
      ends[i] = at[k + 1];
    }
    code_bytes = node.buffers[2];
    for (uint64_t i = 0; i < n; ++i) {
      if (ends[i] > begins[i]) ctx.need(code_bytes, begins[i], ends[i] - begins[i]);
    }
    OC_ASSIGN_OR_RETURN(validity, take_validity(node, 2, nullable, len, rows, ctx, null_count));
  }
  OC_ASSIGN_OR_RETURN(PType lengths_ptype, integer_ptype(f.meta.uncompressed_lengths_ptype(),
                                                         "fsst uncompressed lengths"));
  OC_ASSIGN_OR_RETURN(auto lengths, take_unsigned_child(node, f.legacy ? 1 : 0, lengths_ptype, len,
                                                        rows, ctx, "fsst uncompressed lengths"));
  return decompress_rows(f.table, code_bytes, begins, ends, lengths, std::move(validity),
                         null_count, t, ctx);
}

}  // namespace

void register_fsst() {
  register_encoding("vortex.fsst", decode_fsst);
  register_take("vortex.fsst", take_fsst);
}

}  // namespace oc::format::encodings

namespace oc::format::fsst {

Result<SymbolTable> parse_symbol_table(const Buffer& symbols, const Buffer& lengths) {
  OC_EXPECT(symbols.size() % sizeof(uint64_t) == 0, corrupt,
            "fsst symbols buffer of {} bytes is not a whole number of u64", symbols.size());
  SymbolTable table;
  table.size = symbols.size() / sizeof(uint64_t);
  OC_EXPECT(table.size <= kMaxSymbols, corrupt, "fsst table has {} symbols, at most {}", table.size,
            kMaxSymbols);
  OC_EXPECT(lengths.size() == table.size, corrupt, "fsst has {} symbols but {} symbol lengths",
            table.size, lengths.size());
  for (size_t k = 0; k < table.size; ++k) {
    table.symbols[k] = load_le<uint64_t>(symbols.data() + k * sizeof(uint64_t));
    table.lengths[k] = lengths.data()[k];
    OC_EXPECT(table.lengths[k] >= 1 && table.lengths[k] <= kMaxSymbolLength, corrupt,
              "fsst symbol {} has length {}, expected 1..8", k, table.lengths[k]);
  }
  return table;
}

Result<uint64_t> total_row_bytes(std::span<const uint64_t> lengths) {
  uint64_t total = 0;
  for (const uint64_t n : lengths) {
    OC_EXPECT(n <= INT32_MAX - total, unsupported,
              "fsst column of more than {} bytes exceeds Arrow's 2 GiB i32 offsets", INT32_MAX);
    total += n;
  }
  return total;
}

}  // namespace oc::format::fsst
