// SPDX-License-Identifier: Apache-2.0
#include "format/reader.hpp"

#include <algorithm>

#include "config/defaults.hpp"
#include "format/decode.hpp"
#include "format/scan.hpp"
#include "format/string_views.hpp"

namespace oc::format {

// Every entry point below runs under catch_all: nothing throws across the reader's API (a
// failed allocation is Errc::out_of_memory for that call).

Result<std::shared_ptr<VortexFile>> VortexFile::open(std::shared_ptr<SegmentSource> source) {
  register_default_encodings();
  auto footer = catch_all("opening", [&] { return read_footer(*source); });
  if (!footer.ok()) return std::move(footer.error()).with_context("opening " + source->name());
  return std::shared_ptr<VortexFile>(new VortexFile(std::move(source), std::move(footer).value()));
}

Result<std::shared_ptr<VortexFile>> VortexFile::open(std::shared_ptr<SegmentSource> source,
                                                     Footer footer) {
  register_default_encodings();
  OC_EXPECT(footer.file_size == source->size(), corrupt,
            "{} is {} bytes, its known footer is of a file of {} bytes", source->name(),
            source->size(), footer.file_size);
  return std::shared_ptr<VortexFile>(new VortexFile(std::move(source), std::move(footer)));
}

Result<std::shared_ptr<VortexFile>> VortexFile::open_path(const std::string& path) {
  OC_ASSIGN_OR_RETURN(auto source, open_local_file(path));
  return open(std::move(source));
}

void add_read_stats(ScanStats& into, const ScanStats& s) {
  into.rows_scanned += s.rows_scanned;
  into.rows_pruned += s.rows_pruned;
  into.zones_total += s.zones_total;
  into.zones_pruned += s.zones_pruned;
  into.file_pruned = into.file_pruned || s.file_pruned;
  into.segments_read += s.segments_read;
  into.bytes_read += s.bytes_read;
  into.pushdown_calls += s.pushdown_calls;
  into.plan_ns += s.plan_ns;
  into.fetch_ns += s.fetch_ns;
  into.filter_ns += s.filter_ns;
  into.decode_ns += s.decode_ns;
}

VortexFile::~VortexFile() { TakeCache::process().forget(take_cache_id_); }

Result<std::unique_ptr<LayoutReader>> VortexFile::open_reader(SegmentCache& cache) const {
  return catch_all("opening a reader",
                   [&] { return make_layout_reader(footer_.layout, footer_.dtype, cache); });
}

Result<std::unique_ptr<Scan>> VortexFile::scan(const ScanOptions& options) const {
  if (pushdown_ && !options.chunk_decoder) {  // a pushed-down scan's batches are host memory
    OC_ASSIGN_OR_RETURN(auto remote, catch_all("starting a pushed-down scan", [&] {
                          return pushdown_->try_scan(*this, options);
                        }));
    if (remote) return remote;
  }
  return scan_here(options);
}

Result<std::unique_ptr<Scan>> VortexFile::scan_here(const ScanOptions& options) const {
  return catch_all("starting a scan", [&] { return start_file_scan(shared_from_this(), options); });
}

Result<ColumnPtr> VortexFile::take(std::span<const uint64_t> rows,
                                   const std::vector<std::string>& columns, StringLayout strings,
                                   ScanStats* read) const {
  return catch_all("take", [&] { return take_rows(rows, columns, strings, read); });
}

Result<ColumnPtr> VortexFile::take_rows(std::span<const uint64_t> rows,
                                        const std::vector<std::string>& columns,
                                        StringLayout strings, ScanStats* read) const {
  for (size_t i = 0; i < rows.size(); ++i) {
    OC_EXPECT(rows[i] < row_count(), invalid,
              "take index {} (position {}) is past the file's {} rows", rows[i], i, row_count());
  }
  // Readers take sorted, unique rows; the caller's order and repeats are restored after.
  std::vector<uint64_t> unique(rows.begin(), rows.end());
  std::sort(unique.begin(), unique.end());
  unique.erase(std::unique(unique.begin(), unique.end()), unique.end());
  SegmentCache cache(source_, footer_);
  cache.read_takes_in_part(defaults().take_partial_segment_bytes);
  OC_ASSIGN_OR_RETURN(auto table, open_table_reader(*this, columns, cache));
  table.reader->prefer_strings(strings);
  std::vector<uint32_t> ids;
  for (uint64_t r : unique) table.reader->collect_segments(r, r + 1, ids);
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  // What earlier takes of this file read of the large ones is where they left it; this take's
  // segments go back to the cache however it ends.
  std::vector<uint32_t> in_part;
  for (uint32_t id : ids) {
    if (cache.reads_in_part(id)) in_part.push_back(id);
  }
  cache.adopt_partials(TakeCache::process().check_out(take_cache_id_, in_part));
  struct PutBack {
    SegmentCache& cache;
    uint64_t file;
    ScanStats* read;
    ~PutBack() {
      TakeCache::process().put_back(file, cache.release_partials());
      if (read) {  // what was fetched, however the take ends
        read->segments_read += cache.segments_fetched();
        read->bytes_read += cache.bytes_fetched();
        read->fetch_ns += cache.take_wait_ns();
      }
    }
  } put_back{cache, take_cache_id_, read};
  // Small segments are read whole, all at once; large ones in part, in rounds
  // (format/partial_segment.hpp): each round runs the take, then reads in one batch the bytes
  // it found missing. A dependency chain (tree, then views, then the strings they point to) is
  // no longer than the encoding tree is deep, so a file wanting more rounds gets whole segments.
  std::erase_if(ids, [&](uint32_t id) { return cache.reads_in_part(id); });
  OC_TRY(cache.prefetch(ids));
  const uint32_t max_rounds = 2 * defaults().max_array_depth + 2;
  Result<ColumnPtr> taken = table.reader->take(unique);
  for (uint32_t round = 1; cache.has_pending(); ++round) {
    if (round == max_rounds) cache.need_partials_whole();
    OC_TRY(cache.fetch_pending());
    taken = table.reader->take(unique);
  }
  OC_ASSIGN_OR_RETURN(ColumnPtr got, std::move(taken));
  OC_ASSIGN_OR_RETURN(got, table.to_batch(std::move(got)));
  OC_ASSIGN_OR_RETURN(got, with_string_layout(got, strings));
  if (unique.size() == rows.size() && std::equal(unique.begin(), unique.end(), rows.begin()))
    return got;
  std::vector<uint64_t> where(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    where[i] = static_cast<uint64_t>(std::lower_bound(unique.begin(), unique.end(), rows[i]) -
                                     unique.begin());
  }
  return format::take(got, where);
}

}  // namespace oc::format
