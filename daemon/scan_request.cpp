// SPDX-License-Identifier: Apache-2.0
// The plan of a sharded scan is a pure function of the file and the spec, recomputed for every
// request: a resumed scan needs nothing from the connection that was lost.
#include "daemon/scan_request.hpp"

namespace oc::daemon {

Result<PlannedScan> plan_scan(const fbs::Scan& request,
                              std::shared_ptr<const format::VortexFile> file,
                              uint64_t default_unit_rows, std::shared_ptr<format::ChunkDecoder> device) {
  format::ScanOptions opts;
  if (request.columns()) {
    for (const auto* col : *request.columns()) opts.columns.push_back(col->str());
  }
  if (request.filter()) opts.filter = request.filter()->str();
  opts.batch_rows = request.batch_rows();
  opts.strings = request.string_offsets() ? format::StringLayout::offsets : format::StringLayout::views;
  if (device) {  // decoded on a GPU (client/device_scan.hpp), which delivers strings as offsets
    opts.chunk_decoder = std::move(device);
    opts.strings = format::StringLayout::offsets;
  }
  // One split at a time, as the client's lease limits pace them: splits decoded ahead would
  // wait in the client's slabs, and those that found no room there be copied after decode.
  // The decode pool still decodes a split's columns side by side, and other clients' scans.
  opts.splits_in_flight = 1;
  if (const auto* r = request.ranges(); r && r->size() > 0) {
    OC_EXPECT(!request.sharded() && !request.has_row_range(), invalid,
              "a scan of explicit ranges takes no shard and no row range");
    OC_EXPECT(r->size() % 2 == 0, invalid, "ranges hold begin, end pairs; got {} values",
              r->size());
    std::vector<format::Unit> units;
    for (flatbuffers::uoffset_t i = 0; i < r->size(); i += 2) {
      units.push_back({0, r->Get(i), r->Get(i + 1)});
    }
    const uint64_t n = units.size();
    OC_ASSIGN_OR_RETURN(auto scan, format::scan_units(std::move(file), std::move(opts),
                                                      std::move(units),
                                                      {request.start_unit(), request.start_rows()}));
    return PlannedScan{std::move(scan), n};
  }
  if (!request.sharded()) {
    if (request.has_row_range()) {
      opts.row_range = std::pair{request.row_begin(), request.row_end()};
    }
    OC_ASSIGN_OR_RETURN(auto scan, file->scan(opts));
    return PlannedScan{std::move(scan), 0};
  }
  OC_EXPECT(!request.has_row_range(), invalid,
            "a sharded scan reads whole units; it takes no row range");
  const format::ShardSpec spec{.rank = request.rank(),
                               .world_size = request.world_size(),
                               .worker = request.worker(),
                               .num_workers = request.num_workers(),
                               .shuffle = request.shuffle(),
                               .seed = request.seed(),
                               .epoch = request.epoch()};
  OC_TRY(format::validate(spec));
  const uint64_t unit_rows = request.unit_rows() ? request.unit_rows() : default_unit_rows;
  OC_ASSIGN_OR_RETURN(auto all, format::file_units(*file, 0, unit_rows));
  std::vector<format::Unit> mine = format::shard_units(all, spec);
  const uint64_t units = mine.size();
  OC_ASSIGN_OR_RETURN(auto scan,
                      format::scan_units(std::move(file), std::move(opts), std::move(mine),
                                         {request.start_unit(), request.start_rows()}));
  return PlannedScan{std::move(scan), units};
}

format::UnitPosition position_after(const format::Scan& scan) {
  const auto* units = dynamic_cast<const format::UnitScan*>(&scan);
  return units ? units->position() : format::UnitPosition{};
}

}  // namespace oc::daemon
