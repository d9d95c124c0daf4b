// SPDX-License-Identifier: Apache-2.0
// vortex.zoned and vortex.stats: [data, zones table]: the data, and zone maps that prune it.
#include <algorithm>
#include <iterator>
#include <numeric>
#include <optional>
#include <utility>

#include "config/defaults.hpp"
#include "format/array_tree.hpp"
#include "format/compressed_eval.hpp"
#include "format/decode.hpp"
#include "format/expr_eval.hpp"
#include "format/layouts/layouts.hpp"
#include "format/parallel.hpp"
#include "format/proto/layouts.pb.h"
#include "format/scan_profile.hpp"
#include "format/string_views.hpp"

namespace oc::format::layouts {
namespace {

/// Zone statistics a column of type @p t can carry; nullptr when the aggregate does not apply.
DTypePtr zone_stat_dtype(std::string_view stat, const DType& t) {
  const DType& s = t.storage();
  const bool ordered = s.kind == TypeKind::boolean || s.kind == TypeKind::primitive ||
                       s.kind == TypeKind::decimal || s.kind == TypeKind::utf8 ||
                       s.kind == TypeKind::binary;
  if (stat == "max" || stat == "min" || stat == "vortex.max" || stat == "vortex.min") {
    return ordered ? t.with_nullable(true) : nullptr;
  }
  if (stat == "vortex.bounded_max" || stat == "vortex.bounded_min") {
    if (!ordered) return nullptr;
    return DType::make_struct({"value", "truncated"},
                              {t.with_nullable(true), DType::make_bool(false)}, true);
  }
  if (stat == "sum" || stat == "vortex.sum") {
    if (s.kind == TypeKind::boolean) return DType::make_primitive(PType::u64, true);
    if (s.kind == TypeKind::primitive) {
      if (ptype_is_float(s.ptype)) return DType::make_primitive(PType::f64, true);
      return DType::make_primitive(ptype_is_signed(s.ptype) ? PType::i64 : PType::u64, true);
    }
    if (s.kind == TypeKind::decimal) {
      auto d = std::make_shared<DType>(s);
      d->precision = static_cast<uint8_t>(std::min(76, s.precision + 10));
      d->nullable = true;
      return d;
    }
    return nullptr;
  }
  // Counts are read as nullable: writers encode them with nullable codes when a dictionary
  // compresses them, and a non-nullable read type would reject that.
  if (stat == "nan_count" || stat == "vortex.nan_count") {
    return (s.kind == TypeKind::primitive && ptype_is_float(s.ptype))
               ? DType::make_primitive(PType::u64, true)
               : nullptr;
  }
  if (stat == "null_count" || stat == "vortex.null_count")
    return DType::make_primitive(PType::u64, true);
  if (stat == "is_constant" || stat == "is_sorted" || stat == "is_strict_sorted")
    return DType::make_bool(true);
  if (stat == "uncompressed_size_in_bytes") return DType::make_primitive(PType::u64, true);
  return nullptr;
}

class ZonedReader final : public LayoutReader {
 public:
  ZonedReader(LayoutPtr l, DTypePtr t, SegmentCache& c, std::unique_ptr<LayoutReader> data)
      : LayoutReader(std::move(l), std::move(t), c), data_(std::move(data)) {}

  void collect_splits(uint64_t base, std::vector<uint64_t>& out) const override {
    data_->collect_splits(base, out);
  }
  void collect_segments(uint64_t b, uint64_t e, std::vector<uint32_t>& out) const override {
    data_->collect_segments(b, e, out);
  }
  Result<ColumnPtr> read(uint64_t begin, uint64_t end) override { return data_->read(begin, end); }
  Result<ColumnPtr> read_to(ChunkDecoder& d, uint64_t begin, uint64_t end,
                            const std::vector<uint8_t>* keep) override {
    return data_->read_to(d, begin, end, keep);
  }
  Result<ColumnPtr> take(std::span<const uint64_t> rows) override { return data_->take(rows); }
  void release() override { data_->release(); }
  void plan_rows(std::span<const RowWindow> ranges) override { data_->plan_rows(ranges); }
  void prefer_strings(StringLayout strings) override { data_->prefer_strings(strings); }
  std::vector<uint64_t> independent_starts() const override { return data_->independent_starts(); }
  void release_before(uint64_t row) override { data_->release_before(row); }
  Result<std::vector<uint8_t>> evaluate(const BoundExpr& pred, uint64_t begin,
                                        uint64_t end) override {
    return data_->evaluate(pred, begin, end);
  }
  void collect_zone_readers(uint64_t base, std::vector<ZoneMapRef>& out) override {
    out.push_back({base, this});
    data_->collect_zone_readers(base, out);
  }

  Result<ZoneTable> zones() override {
    if (zones_.table) return zones_;
    OC_EXPECT(layout_->children.size() == 2, corrupt, "{} needs 2 children", layout_->encoding);
    const auto& m = layout_->metadata;
    std::vector<std::string> names;
    std::vector<DTypePtr> types;
    auto add = [&](const std::string& name) {
      if (auto t = zone_stat_dtype(name, *dtype_)) {
        names.push_back(name);
        types.push_back(t);
        return true;
      }
      return false;
    };
    if (layout_->encoding == "vortex.stats") {
      // u32 LE zone_len, then a bitset of present Stat ordinals (bit i = ordinal i).
      OC_EXPECT(m.size() >= 4, corrupt, "vortex.stats metadata of {} bytes", m.size());
      zones_.zone_len = load_le<uint32_t>(m.data());
      static constexpr const char* kStats[] = {
          "is_constant", "is_sorted",  "is_strict_sorted",           "max",      "min",
          "sum",         "null_count", "uncompressed_size_in_bytes", "nan_count"};
      for (size_t i = 0; i < std::size(kStats); ++i) {
        const size_t byte = 4 + i / 8;
        if (byte < m.size() && ((m[byte] >> (i % 8)) & 1)) {
          if (add(kStats[i]) && (i == 3 || i == 4)) {
            names.push_back(i == 3 ? "max_is_truncated" : "min_is_truncated");
            types.push_back(DType::make_bool(false));
          }
        }
      }
    } else {
      OC_EXPECT(!m.empty() && m[0] == 1, unsupported, "vortex.zoned metadata version {}",
                m.empty() ? -1 : m[0]);
      OC_ASSIGN_OR_RETURN(auto meta, parse_metadata<pb::ZonedLayoutMetadata>(
                                         std::span(m).subspan(1), "vortex.zoned"));
      zones_.zone_len = meta.zone_len();
      for (const auto& a : meta.aggregates()) add(a.id());
    }
    // Writers store a bounded (truncated) min or max either as the plain value or as
    // {value, truncated}; the file does not say which, so try each shape, plain first.
    std::vector<size_t> bounded;
    for (size_t i = 0; i < types.size(); ++i) {
      if (types[i]->kind == TypeKind::struct_ && names[i].find("bounded_") != std::string::npos)
        bounded.push_back(i);
    }
    Result<ColumnPtr> table = OC_ERROR(Errc::corrupt, "no zones table shape matched");
    for (size_t combo = 0; combo < (size_t{1} << bounded.size()); ++combo) {
      auto shaped = types;
      for (size_t b = 0; b < bounded.size(); ++b) {
        if (!((combo >> b) & 1)) shaped[bounded[b]] = types[bounded[b]]->children[0];
      }
      auto table_t = DType::make_struct(names, shaped, false);
      OC_ASSIGN_OR_RETURN(auto reader,
                          make_layout_reader(layout_->children[1], table_t, cache_, 1));
      auto attempt = reader->read(0, reader->row_count());
      // Report an unsupported encoding over a shape mismatch: it is the real reason.
      if (attempt.ok() || combo == 0 || attempt.error().code() == Errc::unsupported) {
        table = std::move(attempt);
      }
      if (table.ok()) break;
    }
    OC_TRY(table);
    zones_.table = std::move(table).value();
    return zones_;
  }

 private:
  std::unique_ptr<LayoutReader> data_;
  ZoneTable zones_;
};

}  // namespace

Result<std::unique_ptr<LayoutReader>> zoned(const LayoutPtr& l, const DTypePtr& t,
                                            SegmentCache& cache, uint32_t depth) {
  const std::string& id = l->encoding;  // vortex.zoned, or vortex.stats (older writers)
  OC_EXPECT(l->children.size() == 2, corrupt, "{} layout with {} children", id, l->children.size());
  OC_EXPECT(l->children[0]->row_count == l->row_count, corrupt, "{} data has {} rows, layout {}",
            id, l->children[0]->row_count, l->row_count);
  OC_ASSIGN_OR_RETURN(auto data, make_layout_reader(l->children[0], t, cache, depth + 1));
  return std::unique_ptr<LayoutReader>(std::make_unique<ZonedReader>(l, t, cache, std::move(data)));
}

}  // namespace oc::format::layouts
