// SPDX-License-Identifier: Apache-2.0
// vortex.pco and vortex.pco.v2: numbers compressed with pcodec (the compact writer's choice for
// integer and float columns). v2 is the same array under the ID writers use for 8-bit types;
// `vortex.pco` never holds them (upstream's reader refuses them there, and so does this one).
//
//   metadata: PcoMetadata { header = 1 (pcodec's wrapped header), chunks = 2 { pages = 1 {
//             n_values = 1 } } } (format/proto/pco.proto)
//   buffers:  [chunk_meta_0 .. chunk_meta_{c-1}, page_0 .. page_{p-1}]: every chunk's meta first,
//             then every page of every chunk, in order (p = the pages of all chunks). Readers
//             before upstream's PR #4530 expected meta_0, pages of 0, meta_1, ...; writers have
//             always written the metas first, which is what files hold.
//   children: [validity] (optional; a Bool array of len rows)
//
// Only valid values are stored: a page's n_values counts valid values, and all pages together
// hold exactly one value per valid row. Pages decode independently (each carries its own delta
// state), so a slice decodes only the pages that hold its rows' values and a take only the
// pages its rows fall in; format/pcodec/ decodes one page.
#include <algorithm>
#include <cstring>
#include <vector>

#include "format/decode.hpp"
#include "format/encodings/registry.hpp"
#include "format/pcodec/pcodec.hpp"
#include "format/proto/pco.pb.h"

namespace oc::format::encodings {
namespace {

struct Page {
  size_t chunk = 0;    // index of its chunk (and chunk-meta buffer)
  size_t buffer = 0;   // index of its buffer in the node
  uint64_t first = 0;  // index of its first value among all stored values
  uint32_t n_values = 0;
};

// What the metadata says, checked against the node's buffers.
struct PcoArray {
  pcodec::FormatVersion version;
  pcodec::Number number = pcodec::Number::u16;
  size_t width = 0;
  std::vector<Page> pages;
  uint64_t n_values = 0;
};

Result<pcodec::Number> number_of(const DType& st, bool v2, std::string_view id) {
  OC_EXPECT(st.kind == TypeKind::primitive, corrupt, "{} for {}", id, st.to_string());
  switch (st.ptype) {
    case PType::u8:
    case PType::i8:
      OC_EXPECT(v2, corrupt, "{} holds no 8-bit values (vortex.pco.v2 does), found {}", id,
                st.to_string());
      return st.ptype == PType::u8 ? pcodec::Number::u8 : pcodec::Number::i8;
    case PType::u16:
      return pcodec::Number::u16;
    case PType::i16:
      return pcodec::Number::i16;
    case PType::u32:
      return pcodec::Number::u32;
    case PType::i32:
      return pcodec::Number::i32;
    case PType::u64:
      return pcodec::Number::u64;
    case PType::i64:
      return pcodec::Number::i64;
    case PType::f16:
      return pcodec::Number::f16;
    case PType::f32:
      return pcodec::Number::f32;
    case PType::f64:
      return pcodec::Number::f64;
  }
  return OC_ERROR(Errc::corrupt, "{} for {}", id, st.to_string());
}

Result<PcoArray> read_array(const ArrayView& node, const DType& st, bool v2) {
  OC_EXPECT(node.children.size() <= 1, corrupt, "{} has {} children, expected 0..1", node.encoding,
            node.children.size());
  PcoArray a;
  OC_ASSIGN_OR_RETURN(a.number, number_of(st, v2, node.encoding));
  a.width = pcodec::width(a.number);
  OC_ASSIGN_OR_RETURN(auto meta, parse_metadata<pb::PcoMetadata>(node.metadata, "vortex.pco"));
  const auto& header = meta.header();
  OC_ASSIGN_OR_RETURN(a.version,
                      pcodec::parse_wrapped_header(std::span<const uint8_t>(
                          reinterpret_cast<const uint8_t*>(header.data()), header.size())));
  const size_t chunks = static_cast<size_t>(meta.chunks_size());
  size_t buffer = chunks;
  for (size_t c = 0; c < chunks; ++c) {
    for (const auto& p : meta.chunks(static_cast<int>(c)).pages()) {
      OC_EXPECT(buffer < node.buffers.size(), corrupt,
                "{} has {} buffers, fewer than its {} chunk metas and pages", node.encoding,
                node.buffers.size(), chunks);
      a.pages.push_back(Page{c, buffer++, a.n_values, p.n_values()});
      a.n_values += p.n_values();  // at most 2^32 per page, as many pages as buffers: no overflow
    }
  }
  OC_EXPECT(buffer == node.buffers.size(), corrupt,
            "{} has {} buffers, its metadata {} chunk metas and {} pages", node.encoding,
            node.buffers.size(), chunks, a.pages.size());
  return a;
}

// Decodes the stored values [first, last) into a new buffer, decoding only the pages that hold
// them. A page wholly inside the range decodes in place; the pages at either end through a
// scratch buffer.
Result<Buffer> decode_values(const ArrayView& node, const PcoArray& a, uint64_t first,
                             uint64_t last, DecodeContext& ctx) {
  OC_TRY(ctx.check_alloc(last - first, a.width, "pco values"));
  Buffer out = Buffer::allocate_array_for_overwrite(last - first, a.width);
  auto page = std::partition_point(a.pages.begin(), a.pages.end(),
                                   [&](const Page& p) { return p.first + p.n_values <= first; });
  std::optional<pcodec::ChunkDecoder> chunk;
  size_t chunk_index = SIZE_MAX;
  std::vector<uint8_t> scratch;
  for (; page != a.pages.end() && page->first < last; ++page) {
    if (page->n_values == 0) continue;
    if (chunk_index != page->chunk) {
      OC_ASSIGN_OR_RETURN(auto d, pcodec::ChunkDecoder::parse(a.version, a.number,
                                                              node.buffers[page->chunk].span()));
      chunk.emplace(std::move(d));
      chunk_index = page->chunk;
    }
    const std::span<const uint8_t> bytes = node.buffers[page->buffer].span();
    const uint64_t from = std::max(first, page->first);
    const uint64_t to = std::min(last, page->first + page->n_values);
    uint8_t* dst = out.mutable_data() + (from - first) * a.width;
    if (from == page->first && to == page->first + page->n_values) {
      OC_TRY(chunk->decode_page(bytes, page->n_values, dst));
      continue;
    }
    OC_TRY(ctx.check_alloc(page->n_values, a.width, "pco page"));
    scratch.resize(static_cast<size_t>(page->n_values) * a.width);
    OC_TRY(chunk->decode_page(bytes, page->n_values, scratch.data()));
    std::memcpy(dst, scratch.data() + (from - page->first) * a.width, (to - from) * a.width);
  }
  return out;
}

// Spreads @p packed (one value per valid row of the window, in order) over the window's rows.
Buffer scatter(const Buffer& packed, size_t width, uint64_t rows, const Buffer& validity) {
  if (validity.empty()) return packed;
  Buffer values = Buffer::allocate_array(rows, width);  // null rows read as zeros
  const uint8_t* src = packed.data();
  for (uint64_t i = 0; i < rows; ++i) {
    if (!bitmap_get(validity.data(), i)) continue;
    std::memcpy(values.mutable_data() + i * width, src, width);
    src += width;
  }
  return values;
}

// Validity of all @p len rows (empty: all valid), checked against the stored value count.
Result<Buffer> all_rows_validity(const ArrayView& node, const DType& st, const PcoArray& a,
                                 uint64_t len, DecodeContext& ctx) {
  int64_t nulls = 0;
  OC_ASSIGN_OR_RETURN(Buffer validity, ctx.without_window([&] {
    return decode_validity(node, 0, st.nullable, len, ctx, nulls);
  }));
  OC_EXPECT(a.n_values == len - static_cast<uint64_t>(nulls), corrupt,
            "{} stores {} values for {} valid rows", node.encoding, a.n_values,
            len - static_cast<uint64_t>(nulls));
  return validity;
}

Result<ColumnPtr> decode_pco_as(const ArrayView& node, const DTypePtr& t, uint64_t len,
                                DecodeContext& ctx, bool v2) {
  const DType& st = t->storage();
  OC_ASSIGN_OR_RETURN(PcoArray a, read_array(node, st, v2));
  OC_ASSIGN_OR_RETURN(Buffer validity, all_rows_validity(node, st, a, len, ctx));
  const RowWindow w = ctx.window().value_or(RowWindow{0, len});
  // The window's values are those of its valid rows: they start after the valid rows before it.
  uint64_t first = w.begin, last = w.end;
  int64_t window_nulls = 0;
  Buffer window_validity;
  if (!validity.empty()) {
    first -= static_cast<uint64_t>(count_nulls(validity.data(), 0, w.begin));
    window_nulls = count_nulls(validity.data(), w.begin, w.size());
    last = first + w.size() - static_cast<uint64_t>(window_nulls);
    window_validity = Buffer::allocate((w.size() + 7) / 8);
    copy_bits(validity.data(), w.begin, window_validity.mutable_data(), 0, w.size());
  }
  OC_ASSIGN_OR_RETURN(Buffer packed, decode_values(node, a, first, last, ctx));
  auto c = std::make_shared<Column>();
  c->dtype = t;
  c->length = w.size();
  c->buffers.push_back(scatter(packed, a.width, w.size(), window_validity));
  c->validity = std::move(window_validity);
  c->null_count = window_nulls;
  return ColumnPtr(std::move(c));
}

// A take decodes the pages that hold the taken rows' values, once each, and gathers from them.
Result<ColumnPtr> take_pco_as(const ArrayView& node, const DTypePtr& t, uint64_t len,
                              std::span<const uint64_t> rows, DecodeContext& ctx, bool v2) {
  const DType& st = t->storage();
  OC_ASSIGN_OR_RETURN(PcoArray a, read_array(node, st, v2));
  OC_ASSIGN_OR_RETURN(Buffer validity, all_rows_validity(node, st, a, len, ctx));
  // Each valid taken row's value index: its row minus the nulls before it (rows are sorted).
  std::vector<uint64_t> value_of(rows.size(), UINT64_MAX);
  Buffer out_validity;
  int64_t out_nulls = 0;
  if (!validity.empty()) out_validity = Buffer::allocate((rows.size() + 7) / 8);
  uint64_t scanned = 0, nulls_before = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (!validity.empty()) {
      nulls_before +=
          static_cast<uint64_t>(count_nulls(validity.data(), scanned, rows[i] - scanned));
      scanned = rows[i];
      if (!bitmap_get(validity.data(), rows[i])) {
        ++out_nulls;
        continue;
      }
      bitmap_set(out_validity.mutable_data(), i, true);
    }
    value_of[i] = rows[i] - nulls_before;
  }
  // Name the bytes first (chunk metas and pages of the values taken), so that a take reading
  // its segment in part fetches all of them in one round.
  std::vector<size_t> page_of(rows.size(), SIZE_MAX);
  size_t p = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (value_of[i] == UINT64_MAX) continue;
    while (a.pages[p].first + a.pages[p].n_values <= value_of[i]) ++p;  // values are sorted
    page_of[i] = p;
  }
  size_t last_page = SIZE_MAX;
  for (size_t pg : page_of) {
    if (pg == SIZE_MAX || pg == last_page) continue;
    ctx.need(node.buffers[a.pages[pg].chunk]);
    ctx.need(node.buffers[a.pages[pg].buffer]);
    last_page = pg;
  }
  OC_TRY(ctx.check_alloc(rows.size(), a.width, "pco take"));
  Buffer values = Buffer::allocate_array(rows.size(), a.width);
  Buffer page_values;
  last_page = SIZE_MAX;
  for (size_t i = 0; i < rows.size(); ++i) {
    const size_t pg = page_of[i];
    if (pg == SIZE_MAX) continue;
    if (pg != last_page) {
      const Page& page = a.pages[pg];
      OC_ASSIGN_OR_RETURN(page_values,
                          decode_values(node, a, page.first, page.first + page.n_values, ctx));
      last_page = pg;
    }
    std::memcpy(values.mutable_data() + i * a.width,
                page_values.data() + (value_of[i] - a.pages[pg].first) * a.width, a.width);
  }
  auto c = std::make_shared<Column>();
  c->dtype = t;
  c->length = rows.size();
  c->buffers.push_back(std::move(values));
  c->validity = std::move(out_validity);
  c->null_count = out_nulls;
  return ColumnPtr(std::move(c));
}

Result<ColumnPtr> decode_pco(const ArrayView& node, const DTypePtr& t, uint64_t len,
                             DecodeContext& ctx) {
  return decode_pco_as(node, t, len, ctx, false);
}
Result<ColumnPtr> decode_pco_v2(const ArrayView& node, const DTypePtr& t, uint64_t len,
                                DecodeContext& ctx) {
  return decode_pco_as(node, t, len, ctx, true);
}
Result<ColumnPtr> take_pco(const ArrayView& node, const DTypePtr& t, uint64_t len,
                           std::span<const uint64_t> rows, DecodeContext& ctx) {
  return take_pco_as(node, t, len, rows, ctx, false);
}
Result<ColumnPtr> take_pco_v2(const ArrayView& node, const DTypePtr& t, uint64_t len,
                              std::span<const uint64_t> rows, DecodeContext& ctx) {
  return take_pco_as(node, t, len, rows, ctx, true);
}

}  // namespace

void register_pco() {
  register_encoding("vortex.pco", decode_pco, /*window_aware=*/true);
  register_encoding("vortex.pco.v2", decode_pco_v2, /*window_aware=*/true);
  register_take("vortex.pco", take_pco);
  register_take("vortex.pco.v2", take_pco_v2);
}

}  // namespace oc::format::encodings
