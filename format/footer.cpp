// SPDX-License-Identifier: Apache-2.0
#include "format/footer.hpp"

#include <algorithm>
#include <cstring>

#include "config/defaults.hpp"
#include "format/array_tree.hpp"
#include "format/fbs/vortex_file_generated.h"
#include "format/file_format.hpp"
#include "format/flatbuffer_util.hpp"

namespace oc::format {
namespace {

Result<LayoutPtr> build_layout(const fb::LayoutNode* node, const Footer& f, uint32_t depth) {
  OC_EXPECT(node != nullptr, corrupt, "missing layout node");
  OC_EXPECT(depth < defaults().max_array_depth, corrupt, "layout tree deeper than {}", depth);
  OC_EXPECT(node->encoding() < f.layout_specs.size(), corrupt,
            "layout encoding index {} past {} layout specs", node->encoding(),
            f.layout_specs.size());
  auto out = std::make_shared<LayoutNode>();
  out->encoding = f.layout_specs[node->encoding()];
  out->row_count = node->row_count();
  if (node->metadata()) out->metadata.assign(node->metadata()->begin(), node->metadata()->end());
  if (node->segments()) {
    for (uint32_t s : *node->segments()) {
      OC_EXPECT(s < f.segments.size(), corrupt, "layout refers to segment {} of {}", s,
                f.segments.size());
      out->segments.push_back(s);
    }
  }
  if (node->children()) {
    for (const fb::LayoutNode* c : *node->children()) {
      OC_ASSIGN_OR_RETURN(auto child, build_layout(c, f, depth + 1));
      out->children.push_back(std::move(child));
    }
  }
  return LayoutPtr(std::move(out));
}

struct Located {
  const fb::PostscriptSegment* seg;
  const char* what;
  bool required;
};

// A tail without the Vortex magic, named for what it most likely is: users hand onecopy Parquet
// files, and truncated copies of Vortex files, far more often than random bytes. Telling them
// apart costs a 4-byte read of the head, on this error path only.
Error not_vortex(const uint8_t* last4, uint64_t file_size, SegmentSource* source,
                 std::string_view name) {
  using namespace forever;
  static constexpr std::array<uint8_t, 4> kParquetMagic{'P', 'A', 'R', '1'};
  if (std::memcmp(last4, kParquetMagic.data(), 4) == 0) {
    return OC_ERROR(Errc::corrupt, "{} is not a Vortex file (Parquet magic PAR1 found)", name);
  }
  if (source != nullptr) {
    const ByteRange head{0, kMagic.size()};
    auto first = source->read(std::span(&head, 1));
    if (first.ok() && first->size() == 1 && (*first)[0].size() == kMagic.size() &&
        std::memcmp((*first)[0].data(), kMagic.data(), kMagic.size()) == 0) {
      return OC_ERROR(Errc::corrupt,
                      "{} is truncated: it starts with the Vortex magic VTXF but its {} bytes do "
                      "not end with it",
                      name, file_size);
    }
  }
  return OC_ERROR(Errc::corrupt, "{} is not a Vortex file (it does not end with the magic VTXF)",
                  name);
}

}  // namespace

namespace {

// The footer of a file of @p f.file_size bytes whose last bytes @p f.tail_range are @p f.tail:
// read from @p source when the footer starts before them, else an error (`footer_from_bytes`).
Result<Footer> finish_footer(Footer f, SegmentSource* source, std::string_view name) {
  using namespace forever;
  const uint64_t tail_len = f.tail.size();
  const uint8_t* eof = f.tail.data() + f.tail.size() - kEofSize;
  if (std::memcmp(eof + 4, kMagic.data(), 4) != 0) {
    return not_vortex(eof + 4, f.file_size, source, name);
  }
  const uint16_t version = load_le<uint16_t>(eof);
  OC_EXPECT(version == kVersion, unsupported, "Vortex file format version {} (onecopy reads {})",
            version, kVersion);
  const uint16_t ps_len = load_le<uint16_t>(eof + 2);
  OC_EXPECT(ps_len <= kMaxPostscriptSize && ps_len + kEofSize <= tail_len, corrupt,
            "postscript length {} does not fit the {} byte tail", ps_len, tail_len);
  const AlignedBytes ps_bytes(f.tail.span().subspan(tail_len - kEofSize - ps_len, ps_len));
  OC_ASSIGN_OR_RETURN(const fb::Postscript* ps,
                      verified_root<fb::Postscript>(ps_bytes.span(), "postscript"));

  // Locate the four footer FlatBuffers; fetch whatever lies before the tail in one more read.
  const std::array<Located, 4> parts{{{ps->dtype(), "dtype", false},
                                      {ps->layout(), "layout", true},
                                      {ps->statistics(), "statistics", false},
                                      {ps->footer(), "footer", true}}};
  const uint64_t ps_start = f.file_size - kEofSize - ps_len;
  uint64_t fb_start = ps_start;  // where the footer FlatBuffers begin: the end of the data
  for (const auto& p : parts) {
    if (p.seg == nullptr) {
      OC_EXPECT(!p.required, corrupt, "postscript has no {} segment", p.what);
      continue;
    }
    OC_EXPECT(p.seg->offset() <= ps_start && p.seg->length() <= ps_start - p.seg->offset(), corrupt,
              "{} segment [{}, +{}) overlaps the postscript or runs past EOF", p.what,
              p.seg->offset(), p.seg->length());
    fb_start = std::min(fb_start, p.seg->offset());
  }
  // The footer must lie within a bounded tail: a postscript pointing near the start of a huge
  // object would otherwise turn an open into a read of the whole object.
  const uint64_t footer_bytes_total = f.file_size - fb_start;
  OC_EXPECT(footer_bytes_total <= defaults().footer_max_bytes, corrupt,
            "{}: the footer starts {} bytes before the end of the file, past the {} byte "
            "footer_max_bytes limit",
            name, footer_bytes_total, defaults().footer_max_bytes);
  f.footer_start = fb_start;
  if (fb_start < f.tail_range.offset) {
    OC_EXPECT(source != nullptr, corrupt,
              "{}: the footer starts at byte {}, before the {} bytes given from byte {}", name,
              fb_start, f.tail.size(), f.tail_range.offset);
    // One read of the whole footer region (the tail again included) keeps it in one buffer
    // without joining copies.
    f.tail_range = {fb_start, footer_bytes_total};
    OC_ASSIGN_OR_RETURN(auto whole, source->read(std::span(&f.tail_range, 1)));
    f.tail = whole[0];
    OC_EXPECT(f.tail.size() == footer_bytes_total, corrupt, "{}: short read of the footer", name);
    f.reads_to_open = 2;
  }
  const Buffer& region = f.tail;
  const uint64_t region_start = f.tail_range.offset;
  auto bytes_of = [&](const fb::PostscriptSegment* s) {
    return AlignedBytes(region.span().subspan(s->offset() - region_start, s->length()));
  };

  const AlignedBytes footer_bytes = bytes_of(ps->footer());
  OC_ASSIGN_OR_RETURN(const fb::Footer* footer,
                      verified_root<fb::Footer>(footer_bytes.span(), "footer"));
  if (footer->array_specs()) {
    for (const auto* s : *footer->array_specs()) f.array_specs.push_back(s->id()->str());
  }
  if (footer->layout_specs()) {
    for (const auto* s : *footer->layout_specs()) f.layout_specs.push_back(s->id()->str());
  }
  const uint64_t data_end = fb_start;
  if (footer->segment_specs()) {
    // The verifier checks the vector's length field, not that its 8-byte structs are aligned.
    OC_EXPECT(
        reinterpret_cast<uintptr_t>(footer->segment_specs()->Data()) % alignof(fb::SegmentSpec) ==
            0,
        corrupt, "misaligned segment map in the footer");
    for (const fb::SegmentSpec* s : *footer->segment_specs()) {
      OC_EXPECT(s->offset() <= data_end && s->length() <= data_end - s->offset(), corrupt,
                "segment [{}, +{}) runs past the data region ending at {}", s->offset(),
                s->length(), data_end);
      OC_EXPECT(s->length() <= defaults().max_segment_bytes, corrupt, "segment of {} bytes",
                s->length());
      OC_EXPECT(s->compression() == 0 && s->encryption() == 0, unsupported,
                "compressed or encrypted segments are not supported");
      f.segments.push_back({s->offset(), s->length(), s->alignment_exponent()});
    }
  }

  OC_EXPECT(ps->dtype() != nullptr, unsupported,
            "{} was written without its dtype; onecopy needs the file's schema", name);
  const AlignedBytes dtype_bytes = bytes_of(ps->dtype());
  OC_ASSIGN_OR_RETURN(f.dtype, parse_dtype(dtype_bytes.span()));

  const AlignedBytes layout_bytes = bytes_of(ps->layout());
  OC_ASSIGN_OR_RETURN(const fb::LayoutNode* layout,
                      verified_root<fb::LayoutNode>(layout_bytes.span(), "layout"));
  OC_ASSIGN_OR_RETURN(f.layout, build_layout(layout, f, 0));

  if (ps->statistics() != nullptr) {
    const AlignedBytes stats_bytes = bytes_of(ps->statistics());
    OC_ASSIGN_OR_RETURN(const fb::FileStatistics* stats,
                        verified_root<fb::FileStatistics>(stats_bytes.span(), "statistics"));
    if (stats->field_stats()) {
      for (const fb::ArrayStats* s : *stats->field_stats())
        f.field_stats.push_back(stats_from_flatbuffer(s));
    }
  }
  return f;
}

}  // namespace

Result<Footer> read_footer(SegmentSource& source) {
  Footer f;
  f.file_size = source.size();
  OC_EXPECT(f.file_size >= forever::kMagic.size() + forever::kEofSize, corrupt,
            "{} is {} bytes, too small for a Vortex file", source.name(), f.file_size);
  const uint64_t tail_len = std::min(f.file_size, forever::kInitialReadSize);
  f.tail_range = {f.file_size - tail_len, tail_len};
  OC_ASSIGN_OR_RETURN(auto tail, source.read(std::span(&f.tail_range, 1)));
  OC_EXPECT(tail.size() == 1 && tail[0].size() == tail_len, io, "{}: short read of the tail",
            source.name());
  f.tail = tail[0];
  f.reads_to_open = 1;
  return finish_footer(std::move(f), &source, source.name());
}

Result<Footer> footer_from_bytes(std::string_view name, uint64_t file_size, uint64_t offset,
                                 Buffer bytes) {
  Footer f;
  f.file_size = file_size;
  OC_EXPECT(file_size >= forever::kMagic.size() + forever::kEofSize, corrupt,
            "{} is {} bytes, too small for a Vortex file", name, file_size);
  OC_EXPECT(offset <= file_size && bytes.size() == file_size - offset &&
                bytes.size() >= forever::kEofSize,
            corrupt, "{}: {} footer bytes from byte {} do not end a file of {} bytes", name,
            bytes.size(), offset, file_size);
  f.tail_range = {offset, bytes.size()};
  f.tail = std::move(bytes);
  f.reads_to_open = 0;
  return finish_footer(std::move(f), nullptr, name);
}

}  // namespace oc::format
