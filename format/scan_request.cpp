// SPDX-License-Identifier: Apache-2.0
// A plan is a pure function of the file and the request, recomputed for every request: a
// resumed scan needs nothing from the connection (or the process) that was lost.
#include "format/scan_request.hpp"

#include "config/json.hpp"
#include "config/overloaded.hpp"
#include "format/take_scan.hpp"

namespace oc::format {

Result<void> ScanRequest::validate() const {
  if (const auto* r = std::get_if<RowRange>(&selection)) {
    OC_EXPECT(r->begin <= r->end, invalid, "row range {}:{} is reversed (end before begin)",
              r->begin, r->end);
  } else if (const auto* s = std::get_if<ShardSelection>(&selection)) {
    OC_TRY(format::validate(s->spec));
  } else if (const auto* g = std::get_if<RangeSelection>(&selection)) {
    for (size_t i = 0; i < g->ranges.size(); ++i) {
      OC_EXPECT(g->ranges[i].first <= g->ranges[i].second, invalid,
                "range {} ({}:{}) ends before it begins", i, g->ranges[i].first,
                g->ranges[i].second);
    }
  }
  OC_EXPECT(reads_units() || start == UnitPosition{}, invalid,
            "a start position counts the units of a shard or of explicit ranges; this scan "
            "reads {}",
            std::holds_alternative<RowRange>(selection)   ? "a row range"
            : std::holds_alternative<TakeRows>(selection) ? "the rows of a take"
                                                          : "every row");
  if (std::holds_alternative<TakeRows>(selection)) {
    OC_EXPECT(filter.empty(), invalid,
              "a take reads the rows it names and has no filter (filter the rows first, or scan "
              "with the filter)");
    OC_EXPECT(device == kHostDevice, invalid, "a take decodes on the host, not on device {}",
              device);
    OC_EXPECT(!row_numbers, invalid, "a take's rows are the ones it names: it has no row numbers");
  }
  OC_EXPECT(!row_numbers || device == kHostDevice, invalid,
            "row numbers come from a host scan, not from one on device {}", device);
  OC_EXPECT(device >= kHostReferenceDevice, invalid,
            "device {} is neither a CUDA device nor "
            "the host",
            device);
  return {};
}

std::string ScanRequest::to_json() const {
  std::string out = "{\"columns\": [";
  for (size_t i = 0; i < columns.size(); ++i) {
    if (i) out += ", ";
    append_json_string(out, columns[i]);
  }
  out += "], \"filter\": ";
  append_json_string(out, filter);
  out += fmt::format(", \"batch_rows\": {}, \"selection\": ", batch_rows);
  std::visit(Overloaded{
                 [&](const AllRows&) { out += "{\"all\": true}"; },
                 [&](const RowRange& r) {
                   out += fmt::format("{{\"row_range\": [{}, {}]}}", r.begin, r.end);
                 },
                 [&](const ShardSelection& s) {
                   out += fmt::format(
                       "{{\"shard\": {{\"rank\": {}, \"world_size\": {}, \"worker\": {}, "
                       "\"num_workers\": {}, \"shuffle\": {}, \"seed\": {}, \"epoch\": {}, "
                       "\"unit_rows\": {}}}}}",
                       s.spec.rank, s.spec.world_size, s.spec.worker, s.spec.num_workers,
                       s.spec.shuffle, s.spec.seed, s.spec.epoch, s.unit_rows);
                 },
                 [&](const RangeSelection& g) {
                   out += "{\"ranges\": [";
                   for (size_t i = 0; i < g.ranges.size(); ++i) {
                     out += fmt::format("{}[{}, {}]", i ? ", " : "", g.ranges[i].first,
                                        g.ranges[i].second);
                   }
                   out += "]}";
                 },
                 [&](const TakeRows& t) {
                   out += "{\"rows\": [";
                   for (size_t i = 0; i < t.rows.size(); ++i) {
                     out += fmt::format("{}{}", i ? ", " : "", t.rows[i]);
                   }
                   out += "]}";
                 },
             },
             selection);
  out += fmt::format(
      ", \"strings\": \"{}\", \"device\": {}, \"start\": [{}, {}], \"row_numbers\": {}}}",
      strings == StringLayout::offsets ? "offsets" : "views", device, start.unit, start.rows,
      row_numbers);
  return out;
}

Result<Selection> one_selection(const std::optional<RowRange>& rows,
                                const std::optional<ShardSelection>& shard,
                                const std::optional<RangeSelection>& ranges,
                                const std::optional<TakeRows>& take) {
  const int given = int{rows.has_value()} + int{shard.has_value()} + int{ranges.has_value()} +
                    int{take.has_value()};
  if (given > 1) {
    std::string named;
    for (const auto& [is, what] :
         {std::pair{rows.has_value(), "a row range"}, std::pair{shard.has_value(), "a shard"},
          std::pair{ranges.has_value(), "explicit ranges"},
          std::pair{take.has_value(), "the rows of a take"}}) {
      if (is) named += named.empty() ? what : fmt::format(" and {}", what);
    }
    return OC_ERROR(Errc::invalid,
                    "a scan reads every row, a row range, a shard, explicit ranges or the rows "
                    "of a take: one of them, not {}",
                    named);
  }
  if (rows) return Selection{*rows};
  if (shard) return Selection{*shard};
  if (ranges) return Selection{*ranges};
  if (take) return Selection{*take};
  return Selection{AllRows{}};
}

Result<PlannedScan> plan(std::shared_ptr<const VortexFile> file, const ScanRequest& request,
                         const PlanOptions& how) {
  OC_TRY(request.validate());
  ScanOptions opts;
  opts.columns = request.columns;
  opts.filter = request.filter;
  opts.batch_rows = request.batch_rows;
  opts.strings = request.strings;
  opts.splits_in_flight = how.splits_in_flight;
  opts.row_numbers = request.row_numbers;
  const bool on_device = request.device != kHostDevice;
  if (on_device) {
    OC_EXPECT(how.device_decoder != nullptr, invalid,
              "a scan on device {} needs that device's decoder", request.device);
    // String views would point into host memory: a device scan delivers offsets.
    opts.strings = StringLayout::offsets;
    opts.chunk_decoder = how.device_decoder;
  }
  // A device scan decodes here, onto its device: never pushed down into a storage server.
  const auto whole = [&]() -> Result<PlannedScan> {
    OC_ASSIGN_OR_RETURN(auto scan, on_device ? file->scan_here(opts) : file->scan(opts));
    return PlannedScan{std::move(scan), 0};
  };
  const auto units = [&](std::vector<Unit> list) -> Result<PlannedScan> {
    const uint64_t n = list.size();
    OC_ASSIGN_OR_RETURN(auto scan,
                        scan_units(file, std::move(opts), std::move(list), request.start));
    return PlannedScan{std::move(scan), n};
  };
  return std::visit(
      Overloaded{
          [&](const AllRows&) { return whole(); },
          [&](const RowRange& r) {
            opts.row_range =
                std::pair{r.begin, r.end == RowRange::kToEnd ? file->row_count() : r.end};
            return whole();
          },
          [&](const ShardSelection& s) -> Result<PlannedScan> {
            const uint64_t unit_rows = s.unit_rows             ? s.unit_rows
                                       : how.default_unit_rows ? how.default_unit_rows
                                                               : defaults().shard_unit_rows;
            OC_ASSIGN_OR_RETURN(auto all, file_units(*file, 0, unit_rows));
            return units(shard_units(all, s.spec));
          },
          [&](const RangeSelection& g) {
            std::vector<Unit> list;
            list.reserve(g.ranges.size());
            for (const auto& [b, e] : g.ranges) list.push_back({0, b, e});
            return units(std::move(list));
          },
          [&](const TakeRows& t) -> Result<PlannedScan> {
            OC_ASSIGN_OR_RETURN(auto scan, take_scan(std::move(file), t.rows, request.columns,
                                                     request.batch_rows, request.strings));
            return PlannedScan{std::move(scan), 0};
          },
      },
      request.selection);
}

UnitPosition position_after(const Scan& scan) {
  const auto* units = dynamic_cast<const UnitScan*>(&scan);
  return units ? units->position() : UnitPosition{};
}

}  // namespace oc::format
