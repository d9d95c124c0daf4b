// SPDX-License-Identifier: Apache-2.0
#include "client/inspect.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>

#include "client/human_units.hpp"
#include "config/json.hpp"
#include "format/array_tree.hpp"
#include "format/scalar.hpp"

namespace oc::client {
namespace {

using namespace oc::format;

std::string stat_text(const std::vector<uint8_t>& bytes, const DType& t) {
  if (bytes.empty()) return "-";
  auto s = parse_scalar(bytes);
  return s.ok() ? scalar_to_string(*s, t) : "<invalid>";
}

struct Inspector {
  const VortexFile& file;
  std::map<uint32_t, ArrayView> trees;  // flat segment -> parsed array tree
  std::map<const LayoutNode*, ZoneTable> zones;
  bool json;
  std::string out;

  Result<void> load(const LayoutNode& l) {
    std::vector<uint32_t> flat;
    collect(l, flat);
    std::vector<ByteRange> ranges;
    for (uint32_t id : flat) ranges.push_back(file.footer().segments[id].range());
    OC_ASSIGN_OR_RETURN(auto bufs, file.source().read(ranges));
    for (size_t i = 0; i < flat.size(); ++i) {
      OC_ASSIGN_OR_RETURN(trees[flat[i]], parse_array_tree(bufs[i], file.footer().array_specs));
    }
    return {};
  }
  void collect(const LayoutNode& l, std::vector<uint32_t>& flat) {
    if (l.encoding == "vortex.flat" && l.segments.size() == 1) flat.push_back(l.segments[0]);
    for (const auto& c : l.children) collect(*c, flat);
  }

  // What one column's layout subtree holds, for the summary.
  struct ColumnSummary {
    uint64_t chunks = 1;
    uint64_t bytes = 0;
    std::vector<std::string> encodings;  // in the order first met
    bool zone_map = false;
    bool chunks_counted = false;
  };
  static void add_encodings(const ArrayView& a, std::vector<std::string>& out) {
    if (std::find(out.begin(), out.end(), a.encoding) == out.end()) out.push_back(a.encoding);
    for (const auto& c : a.children) add_encodings(c, out);
  }
  void summarize(const LayoutNode& l, ColumnSummary& c) {
    if (zones.count(&l)) c.zone_map = true;
    if (l.encoding == "vortex.chunked" && !c.chunks_counted) {
      c.chunks = l.children.size();
      c.chunks_counted = true;
    }
    for (uint32_t id : l.segments) {
      c.bytes += file.footer().segments[id].length;
      if (auto t = trees.find(id); t != trees.end()) add_encodings(t->second, c.encodings);
    }
    // A zoned layout's second child is its zone table, not the column's data.
    const bool zoned = l.encoding == "vortex.zoned" || l.encoding == "vortex.stats";
    for (size_t i = 0; i < (zoned ? std::min<size_t>(1, l.children.size()) : l.children.size());
         ++i) {
      summarize(*l.children[i], c);
    }
  }

  std::string array_text(const ArrayView& a, int indent) {
    size_t bytes = 0;
    for (const auto& b : a.buffers) bytes += b.size();
    std::string s = fmt::format("{:{}}{} ({} buffers, {} B)\n", "", indent, a.encoding,
                                a.buffers.size(), bytes);
    for (const auto& c : a.children) s += array_text(c, indent + 2);
    return s;
  }
  std::string array_json(const ArrayView& a) {
    std::string s = fmt::format("{{\"encoding\":{},\"metadata_bytes\":{},\"buffers\":[",
                                json_string(a.encoding), a.metadata.size());
    for (size_t i = 0; i < a.buffers.size(); ++i)
      s += (i ? "," : "") + std::to_string(a.buffers[i].size());
    s += "],\"children\":[";
    for (size_t i = 0; i < a.children.size(); ++i) s += (i ? "," : "") + array_json(a.children[i]);
    return s + "]}";
  }

  void layout_text(const LayoutNode& l, int indent) {
    out += fmt::format("{:{}}{} rows={}", "", indent, l.encoding, l.row_count);
    for (uint32_t id : l.segments) {
      const auto& seg = file.footer().segments[id];
      out += fmt::format(" segment={} @{} +{}B align=2^{}", id, seg.offset, seg.length,
                         seg.alignment_exponent);
    }
    if (auto z = zones.find(&l); z != zones.end()) {
      out +=
          fmt::format(" zone_len={} zones={} stats=[", z->second.zone_len, z->second.table->length);
      for (size_t i = 0; i < z->second.table->dtype->names.size(); ++i) {
        out += (i ? ", " : "") + z->second.table->dtype->names[i];
      }
      out += "]";
    }
    out += "\n";
    if (l.segments.size() == 1 && trees.count(l.segments[0]))
      out += array_text(trees[l.segments[0]], indent + 4);
    for (const auto& c : l.children) layout_text(*c, indent + 2);
  }
  std::string layout_json(const LayoutNode& l) {
    std::string s = fmt::format("{{\"encoding\":{},\"rows\":{},\"segments\":[",
                                json_string(l.encoding), l.row_count);
    for (size_t i = 0; i < l.segments.size(); ++i) {
      const auto& seg = file.footer().segments[l.segments[i]];
      s += fmt::format("{}{{\"id\":{},\"offset\":{},\"length\":{},\"alignment_exponent\":{}}}",
                       i ? "," : "", l.segments[i], seg.offset, seg.length, seg.alignment_exponent);
    }
    s += "]";
    if (l.segments.size() == 1 && trees.count(l.segments[0]))
      s += ",\"array\":" + array_json(trees[l.segments[0]]);
    if (auto z = zones.find(&l); z != zones.end()) {
      s += fmt::format(",\"zone_len\":{},\"zones\":{},\"zone_stats\":[", z->second.zone_len,
                       z->second.table->length);
      for (size_t i = 0; i < z->second.table->dtype->names.size(); ++i) {
        s += (i ? "," : "") + json_string(z->second.table->dtype->names[i]);
      }
      s += "]";
    }
    s += ",\"children\":[";
    for (size_t i = 0; i < l.children.size(); ++i)
      s += (i ? "," : "") + layout_json(*l.children[i]);
    return s + "]}";
  }
};

}  // namespace

namespace {

// One screen: the file, then one line a column with its type, chunks, bytes, encodings and the
// statistics it carries.
std::string summary_text(Inspector& in, const std::vector<std::string>& zone_errors) {
  const VortexFile& file = in.file;
  const Footer& f = file.footer();
  const DType& root = *f.dtype;
  const uint64_t footer_bytes = f.file_size - f.footer_start;
  std::string s = fmt::format(
      "file:    {}\nsize:    {} ({} bytes; footer {}, {} segments; opened in {} read{})\n"
      "rows:    {}\n",
      file.source().name(), human_bytes(f.file_size), f.file_size, human_bytes(footer_bytes),
      f.segments.size(), f.reads_to_open, f.reads_to_open == 1 ? "" : "s", file.row_count());
  const bool per_field = root.kind == TypeKind::struct_ && f.layout->encoding == "vortex.struct" &&
                         f.layout->children.size() == root.children.size();
  const size_t n = per_field ? root.children.size() : 1;
  s += fmt::format("columns: {}\n", root.kind == TypeKind::struct_ ? root.children.size() : 1);
  for (size_t i = 0; i < n; ++i) {
    Inspector::ColumnSummary c;
    in.summarize(per_field ? *f.layout->children[i] : *f.layout, c);
    const DType& t = per_field ? *root.children[i] : root;
    std::string stats = c.zone_map ? "zone map" : "";
    if (i < f.field_stats.size()) {
      const auto& st = f.field_stats[i];
      if (!st.min.empty() || !st.max.empty()) {
        stats += fmt::format("{}min={} max={}", stats.empty() ? "" : ", ", stat_text(st.min, t),
                             stat_text(st.max, t));
      }
      if (st.null_count)
        stats += fmt::format("{}nulls={}", stats.empty() ? "" : ", ", *st.null_count);
    }
    s += fmt::format("  {}: {}; {} chunk{}, {}; {}; {}\n", per_field ? root.names[i] : "(root)",
                     t.to_string(), c.chunks, c.chunks == 1 ? "" : "s", human_bytes(c.bytes),
                     c.encodings.empty() ? std::string("no encodings")
                                         : fmt::format("{}", fmt::join(c.encodings, ", ")),
                     stats.empty() ? "no statistics" : stats);
  }
  for (const auto& e : zone_errors) s += "zone map not decoded: " + e + "\n";
  s += "(--verbose: the layout tree with every segment and encoding)\n";
  return s;
}

}  // namespace

Result<void> inspect(const VortexFile& file, std::ostream& os, bool json, bool verbose) {
  const Footer& f = file.footer();
  Inspector in{file, {}, {}, json, {}};
  OC_TRY(in.load(*f.layout));
  // Zone tables are decoded through the same readers a scan uses; a table onecopy cannot decode
  // is reported, not fatal, since pruning treats it as absent.
  SegmentCache cache(file.source_ptr(), f);
  OC_ASSIGN_OR_RETURN(auto reader, file.open_reader(cache));
  std::vector<ZoneMapRef> zoned;
  reader->collect_zone_readers(0, zoned);
  std::vector<std::string> zone_errors;
  for (const auto& [first_row, z] : zoned) {
    auto t = z->zones();
    if (t.ok())
      in.zones[&z->layout()] = *t;
    else
      zone_errors.push_back(t.error().to_string());
  }
  const DType& root = *f.dtype;
  if (json) {
    std::string s =
        fmt::format("{{\"path\":{},\"file_size\":{},\"rows\":{},\"dtype\":{},\"reads_to_open\":{},",
                    json_string(file.source().name()), f.file_size, file.row_count(),
                    json_string(root.to_string()), f.reads_to_open);
    s += "\"array_specs\":[";
    for (size_t i = 0; i < f.array_specs.size(); ++i)
      s += (i ? "," : "") + json_string(f.array_specs[i]);
    s += "],\"file_stats\":[";
    for (size_t i = 0; i < f.field_stats.size(); ++i) {
      const auto& st = f.field_stats[i];
      const DType& ft =
          root.kind == TypeKind::struct_ && i < root.children.size() ? *root.children[i] : root;
      s += fmt::format(
          "{}{{\"field\":{},\"min\":{},\"max\":{},\"null_count\":{}}}", i ? "," : "",
          json_string(root.kind == TypeKind::struct_ && i < root.names.size() ? root.names[i] : ""),
          json_string(stat_text(st.min, ft)), json_string(stat_text(st.max, ft)),
          st.null_count ? std::to_string(*st.null_count) : "null");
    }
    s += "],\"zone_errors\":[";
    for (size_t i = 0; i < zone_errors.size(); ++i)
      s += (i ? "," : "") + json_string(zone_errors[i]);
    s += "],\"layout\":" + in.layout_json(*f.layout) + "}\n";
    os << s;
    return {};
  }
  if (!verbose) {
    os << summary_text(in, zone_errors);
    return {};
  }
  std::string s = fmt::format(
      "file:    {}\nsize:    {} bytes ({} segments, opened in {} read{})\nrows:    {}\ndtype:   "
      "{}\n",
      file.source().name(), f.file_size, f.segments.size(), f.reads_to_open,
      f.reads_to_open == 1 ? "" : "s", file.row_count(), root.to_string());
  if (!f.field_stats.empty()) {
    s += "file statistics:\n";
    for (size_t i = 0; i < f.field_stats.size(); ++i) {
      const auto& st = f.field_stats[i];
      const bool is_struct = root.kind == TypeKind::struct_ && i < root.children.size();
      const DType& ft = is_struct ? *root.children[i] : root;
      s += fmt::format("  {}: min={} max={} null_count={}\n", is_struct ? root.names[i] : "(root)",
                       stat_text(st.min, ft), stat_text(st.max, ft),
                       st.null_count ? std::to_string(*st.null_count) : "?");
    }
  }
  s += "layout:\n";
  in.out = std::move(s);
  in.layout_text(*f.layout, 2);
  for (const auto& e : zone_errors) in.out += "zone map not decoded: " + e + "\n";
  os << in.out;
  return {};
}

}  // namespace oc::client
