// SPDX-License-Identifier: Apache-2.0
#include "daemon/scan_wire.hpp"

#include <optional>
#include <string>
#include <vector>

#include "config/overloaded.hpp"

namespace oc::daemon {

flatbuffers::Offset<fbs::Scan> to_fbs(flatbuffers::FlatBufferBuilder& fbb, uint64_t id,
                                      uint64_t file, const format::ScanRequest& r) {
  std::vector<flatbuffers::Offset<flatbuffers::String>> cols;
  cols.reserve(r.columns.size());
  for (const auto& c : r.columns) cols.push_back(fbb.CreateString(c));
  const auto columns = fbb.CreateVector(cols);
  const auto filter = fbb.CreateString(r.filter);
  std::vector<uint64_t> flat;
  if (const auto* g = std::get_if<format::RangeSelection>(&r.selection)) {
    for (const auto& [b, e] : g->ranges) flat.insert(flat.end(), {b, e});
  }
  const auto ranges = fbb.CreateVector(flat);
  flatbuffers::Offset<flatbuffers::Vector<uint64_t>> take_rows;
  if (const auto* t = std::get_if<format::TakeRows>(&r.selection)) {
    take_rows = fbb.CreateVector(t->rows);
  }
  fbs::ScanBuilder b(fbb);
  b.add_request(id);
  b.add_file(file);
  b.add_columns(columns);
  b.add_filter(filter);
  b.add_batch_rows(r.batch_rows);
  b.add_ranges(ranges);
  b.add_start_unit(r.start.unit);
  b.add_start_rows(r.start.rows);
  b.add_string_offsets(r.strings == format::StringLayout::offsets);
  b.add_device(r.device);
  b.add_row_numbers(r.row_numbers);
  // The fields clients before `selection` send are filled in too, so that an older daemon reads
  // the same request.
  std::visit(
      Overloaded{
          [&](const format::AllRows&) { b.add_selection(fbs::ScanSelection::AllRows); },
          [&](const format::RowRange& rows) {
            b.add_selection(fbs::ScanSelection::RowRange);
            b.add_has_row_range(true);
            b.add_row_begin(rows.begin);
            b.add_row_end(rows.end);
          },
          [&](const format::ShardSelection& s) {
            b.add_selection(fbs::ScanSelection::Shard);
            b.add_sharded(true);
            b.add_rank(s.spec.rank);
            b.add_world_size(s.spec.world_size);
            b.add_worker(s.spec.worker);
            b.add_num_workers(s.spec.num_workers);
            b.add_shuffle(s.spec.shuffle);
            b.add_seed(s.spec.seed);
            b.add_epoch(s.spec.epoch);
            b.add_unit_rows(s.unit_rows);
          },
          [&](const format::RangeSelection&) { b.add_selection(fbs::ScanSelection::Ranges); },
          [&](const format::TakeRows&) {
            b.add_selection(fbs::ScanSelection::Take);
            b.add_take_rows(take_rows);
          },
      },
      r.selection);
  return b.Finish();
}

Result<format::ScanRequest> from_fbs(const fbs::Scan& scan) {
  format::ScanRequest r;
  if (scan.columns()) {
    for (const auto* c : *scan.columns()) r.columns.push_back(c->str());
  }
  if (scan.filter()) r.filter = scan.filter()->str();
  r.batch_rows = scan.batch_rows();
  r.strings = scan.string_offsets() ? format::StringLayout::offsets : format::StringLayout::views;
  r.device = scan.device();
  r.start = {scan.start_unit(), scan.start_rows()};
  r.row_numbers = scan.row_numbers();

  const auto* flat = scan.ranges();
  OC_EXPECT(flat == nullptr || flat->size() % 2 == 0, invalid,
            "ranges hold begin, end pairs; got {} values", flat ? flat->size() : 0);
  std::optional<format::RangeSelection> ranges;
  const auto sel = scan.selection();
  if (flat != nullptr && (sel == fbs::ScanSelection::Ranges ||
                          (sel == fbs::ScanSelection::Inferred && flat->size()))) {
    ranges.emplace();
    for (flatbuffers::uoffset_t i = 0; i < flat->size(); i += 2) {
      ranges->ranges.emplace_back(flat->Get(i), flat->Get(i + 1));
    }
  }
  std::optional<format::RowRange> rows;
  if (scan.has_row_range()) rows = format::RowRange{scan.row_begin(), scan.row_end()};
  std::optional<format::ShardSelection> shard;
  if (scan.sharded()) {
    shard = format::ShardSelection{{.rank = scan.rank(),
                                    .world_size = scan.world_size(),
                                    .worker = scan.worker(),
                                    .num_workers = scan.num_workers(),
                                    .shuffle = scan.shuffle(),
                                    .seed = scan.seed(),
                                    .epoch = scan.epoch()},
                                   scan.unit_rows()};
  }
  switch (sel) {
    case fbs::ScanSelection::AllRows:
      r.selection = format::AllRows{};
      break;
    case fbs::ScanSelection::RowRange:
      r.selection = rows.value_or(format::RowRange{0, 0});
      break;
    case fbs::ScanSelection::Shard:
      r.selection = shard.value_or(format::ShardSelection{});
      break;
    case fbs::ScanSelection::Ranges:
      r.selection = ranges.value_or(format::RangeSelection{});
      break;
    case fbs::ScanSelection::Take: {
      format::TakeRows take;
      if (const auto* t = scan.take_rows()) take.rows.assign(t->begin(), t->end());
      r.selection = std::move(take);
      break;
    }
    case fbs::ScanSelection::Inferred: {
      // Clients before `selection` never send a take.
      OC_ASSIGN_OR_RETURN(r.selection, format::one_selection(rows, shard, ranges, std::nullopt));
      break;
    }
    default:
      return OC_ERROR(Errc::invalid, "unknown scan selection {}", static_cast<int>(sel));
  }
  return r;
}

}  // namespace oc::daemon
