// SPDX-License-Identifier: Apache-2.0
// The layout tree's entry points: which reader a layout gets (format/layouts/, a file each),
// and what every reader shares.
#include "format/layout_reader.hpp"

#include <algorithm>
#include <string_view>

#include "config/defaults.hpp"
#include "format/expr_eval.hpp"
#include "format/layouts/layouts.hpp"

namespace oc::format {

std::vector<uint64_t> common_independent_starts(std::span<const LayoutReader* const> readers) {
  if (readers.empty()) return {0};
  std::vector<uint64_t> common = readers[0]->independent_starts();
  for (const LayoutReader* r : readers.subspan(1)) {
    const std::vector<uint64_t> mine = r->independent_starts();
    std::vector<uint64_t> both;
    std::set_intersection(common.begin(), common.end(), mine.begin(), mine.end(),
                          std::back_inserter(both));
    common = std::move(both);
  }
  return common;
}

Result<std::vector<ColumnPtr>> LayoutReader::read_each(std::span<const RowWindow> windows) {
  std::vector<ColumnPtr> out;
  out.reserve(windows.size());
  for (const RowWindow& w : windows) {
    OC_ASSIGN_OR_RETURN(ColumnPtr c, read(w.begin, w.end));
    out.push_back(std::move(c));
  }
  return out;
}

Result<std::vector<uint8_t>> LayoutReader::evaluate(const BoundExpr& pred, uint64_t begin,
                                                    uint64_t end) {
  OC_ASSIGN_OR_RETURN(ColumnPtr col, read(begin, end));
  Column batch;
  batch.dtype = DType::make_struct({"value"}, {dtype_}, false);
  batch.length = col->length;
  batch.children.push_back(std::move(col));
  OC_ASSIGN_OR_RETURN(auto truth, evaluate_truth(pred, batch));
  std::vector<uint8_t> out(truth.size());
  for (size_t i = 0; i < truth.size(); ++i) out[i] = static_cast<uint8_t>(truth[i]);
  return out;
}

Result<ColumnPtr> LayoutReader::read_to(ChunkDecoder& d, uint64_t begin, uint64_t end,
                                        const std::vector<uint8_t>* keep) {
  OC_ASSIGN_OR_RETURN(ColumnPtr col, read(begin, end));
  return d.place(std::move(col), keep);
}

Result<ColumnPtr> LayoutReader::take(std::span<const uint64_t> rows) {
  if (rows.empty()) return read(0, 0);
  OC_ASSIGN_OR_RETURN(ColumnPtr window, read(rows.front(), rows.back() + 1));
  std::vector<uint64_t> local(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) local[i] = rows[i] - rows.front();
  return format::take(window, local);
}

Result<std::unique_ptr<LayoutReader>> make_layout_reader(const LayoutPtr& l, const DTypePtr& t,
                                                         SegmentCache& cache, uint32_t depth) {
  OC_EXPECT(depth < defaults().max_array_depth, corrupt, "layout nested deeper than {}", depth);
  using Make = Result<std::unique_ptr<LayoutReader>> (*)(const LayoutPtr&, const DTypePtr&,
                                                         SegmentCache&, uint32_t);
  static constexpr std::pair<std::string_view, Make> kLayouts[] = {
      {"vortex.flat", layouts::flat},      {"vortex.chunked", layouts::chunked},
      {"vortex.struct", layouts::struct_}, {"vortex.dict", layouts::dict},
      {"vortex.zoned", layouts::zoned},    {"vortex.stats", layouts::zoned},
  };
  for (const auto& [id, make] : kLayouts) {
    if (l->encoding == id) return make(l, t, cache, depth);
  }
  return OC_ERROR(Errc::unsupported, "unsupported layout {}", l->encoding);
}

Result<std::unique_ptr<LayoutReader>> make_projected_struct_reader(
    const LayoutPtr& l, const DTypePtr& t, std::span<const std::string> fields,
    SegmentCache& cache) {
  OC_EXPECT(t->kind == TypeKind::struct_ && l->encoding == "vortex.struct", invalid,
            "column projection needs a struct file, this one is {}", t->to_string());
  std::vector<size_t> which;
  std::vector<std::string> names;
  std::vector<DTypePtr> types;
  for (const auto& name : fields) {
    auto it = std::find(t->names.begin(), t->names.end(), name);
    OC_EXPECT(it != t->names.end(), not_found, "no column '{}' in {}", name, t->to_string());
    const size_t i = static_cast<size_t>(it - t->names.begin());
    which.push_back(i);
    names.push_back(name);
    types.push_back(t->children[i]);
  }
  auto out_t = DType::make_struct(std::move(names), std::move(types), t->nullable);
  return layouts::struct_fields(l, t, which, cache, 0, std::move(out_t));
}

}  // namespace oc::format
