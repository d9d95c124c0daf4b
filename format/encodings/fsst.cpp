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
//   children: [codes: a binary array (a vortex.varbin in practice) of len rows, nullable as the
//              dtype is, whose validity is the array's; uncompressed_lengths]
//
// Row i decompresses codes[offsets[i], offsets[i + 1]) to exactly uncompressed_lengths[i] bytes.
// Null rows have empty codes and length 0 as written, and are decoded like any other row.
//
// Output: Arrow utf8/binary. UTF-8 is not validated.
#include "format/encodings/fsst.hpp"

#include <array>

#include "format/decode.hpp"
#include "format/encodings/integers.hpp"
#include "format/encodings/registry.hpp"
#include "format/proto/fsst.pb.h"

namespace oc::format::encodings {
namespace {

// The compressed side of an FSST array, from either form.
struct Codes {
  Buffer bytes;
  std::vector<uint64_t> offsets;  // len + 1
  Buffer validity;
  int64_t null_count = 0;
};

struct SymbolTable {
  std::array<uint64_t, fsst::kMaxSymbols> symbols{};
  std::array<uint8_t, fsst::kMaxSymbols> lengths{};
  size_t size = 0;
};

Result<SymbolTable> parse_symbol_table(const Buffer& symbols, const Buffer& lengths) {
  OC_EXPECT(symbols.size() % sizeof(uint64_t) == 0, corrupt,
            "fsst symbols buffer of {} bytes is not a whole number of u64", symbols.size());
  SymbolTable table;
  table.size = symbols.size() / sizeof(uint64_t);
  OC_EXPECT(table.size <= fsst::kMaxSymbols, corrupt, "fsst table has {} symbols, at most {}",
            table.size, fsst::kMaxSymbols);
  OC_EXPECT(lengths.size() == table.size, corrupt, "fsst has {} symbols but {} symbol lengths",
            table.size, lengths.size());
  for (size_t k = 0; k < table.size; ++k) {
    table.symbols[k] = load_le<uint64_t>(symbols.data() + k * sizeof(uint64_t));
    table.lengths[k] = lengths.data()[k];
    OC_EXPECT(table.lengths[k] >= 1 && table.lengths[k] <= fsst::kMaxSymbolLength, corrupt,
              "fsst symbol {} has length {}, expected 1..8", k, table.lengths[k]);
  }
  return table;
}

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

Result<Codes> legacy_codes(const ArrayView& node, bool nullable, uint64_t len, DecodeContext& ctx) {
  OC_TRY(expect_shape(node, 2, 2, 2));
  OC_ASSIGN_OR_RETURN(ColumnPtr decoded,
                      ctx.decode(node.children[0], DType::make_binary(nullable), len));
  OC_ASSIGN_OR_RETURN(ColumnPtr column, compact(decoded));
  OC_TRY(ctx.check_alloc(saturating_bytes(len + 1, sizeof(uint64_t)), "fsst codes offsets"));
  Codes codes;
  codes.bytes = column->buffers[1];
  codes.offsets.assign(column->offsets(), column->offsets() + len + 1);
  codes.validity = column->validity;
  codes.null_count = column->null_count;
  return codes;
}

Result<ColumnPtr> decode_fsst(const ArrayView& node, const DTypePtr& t, uint64_t len,
                              DecodeContext& ctx) {
  const DType& st = t->storage();
  OC_EXPECT(st.kind == TypeKind::utf8 || st.kind == TypeKind::binary, corrupt, "vortex.fsst for {}",
            t->to_string());
  OC_EXPECT(node.buffers.size() == 2 || node.buffers.size() == 3, corrupt,
            "vortex.fsst has {} buffers, expected 3 (or 2 in the legacy form)",
            node.buffers.size());
  OC_ASSIGN_OR_RETURN(auto meta, parse_metadata<pb::FsstMetadata>(node.metadata, "vortex.fsst"));
  OC_ASSIGN_OR_RETURN(SymbolTable table, parse_symbol_table(node.buffers[0], node.buffers[1]));

  const bool legacy = node.buffers.size() == 2;
  Codes codes;
  if (legacy) {
    OC_ASSIGN_OR_RETURN(codes, legacy_codes(node, st.nullable, len, ctx));
  } else {
    OC_ASSIGN_OR_RETURN(codes, current_codes(node, meta, st.nullable, len, ctx));
  }
  for (uint64_t i = 0; i < len; ++i) {
    OC_EXPECT(codes.offsets[i] <= codes.offsets[i + 1], corrupt,
              "fsst codes offsets decrease at row {}: {} > {}", i, codes.offsets[i],
              codes.offsets[i + 1]);
  }
  OC_EXPECT(codes.offsets[len] <= codes.bytes.size(), corrupt,
            "fsst codes offsets end at {} past {} code bytes", codes.offsets[len],
            codes.bytes.size());

  OC_ASSIGN_OR_RETURN(PType lengths_ptype, integer_ptype(meta.uncompressed_lengths_ptype(),
                                                         "fsst uncompressed lengths"));
  OC_ASSIGN_OR_RETURN(auto lengths, decode_unsigned_child(node, legacy ? 1 : 0, lengths_ptype, len,
                                                          ctx, "fsst uncompressed lengths"));
  uint64_t total = 0;
  for (uint64_t n : lengths) {
    total += n;
    OC_EXPECT(total <= INT32_MAX, unsupported,
              "fsst column of more than {} bytes exceeds Arrow's 2 GiB i32 offsets", total);
  }
  OC_TRY(ctx.check_alloc(total + (len + 1) * sizeof(int32_t), "fsst values"));

  Buffer offsets = Buffer::allocate((len + 1) * sizeof(int32_t));
  Buffer bytes = Buffer::allocate(total);
  int32_t* out_offsets = offsets.mutable_as<int32_t>();
  uint64_t pos = 0;
  for (uint64_t i = 0; i < len; ++i) {
    out_offsets[i] = static_cast<int32_t>(pos);
    const uint64_t begin = codes.offsets[i];
    const auto r = fsst::decompress(table.symbols.data(), table.lengths.data(), table.size,
                                    codes.bytes.data() + begin, codes.offsets[i + 1] - begin,
                                    bytes.mutable_data() + pos, lengths[i]);
    OC_EXPECT(r.status == fsst::DecodeStatus::ok, corrupt,
              "fsst row {} stops after {} of its {} bytes: {}", i, r.written, lengths[i],
              fsst::describe(r.status));
    OC_EXPECT(r.written == lengths[i], corrupt, "fsst row {} decompresses to {} bytes, expected {}",
              i, r.written, lengths[i]);
    pos += lengths[i];
  }
  out_offsets[len] = static_cast<int32_t>(pos);

  auto c = std::make_shared<Column>();
  c->dtype = t;
  c->length = len;
  c->validity = std::move(codes.validity);
  c->null_count = codes.null_count;
  c->buffers.push_back(std::move(offsets));
  c->buffers.push_back(std::move(bytes));
  return ColumnPtr(std::move(c));
}

}  // namespace

void register_fsst() { register_encoding("vortex.fsst", decode_fsst); }

}  // namespace oc::format::encodings
