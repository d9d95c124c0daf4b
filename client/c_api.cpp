// SPDX-License-Identifier: Apache-2.0
// The C API edge: Result errors become codes and messages; exceptions never cross it.
#include "client/c_api.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <span>
#include <sstream>
#include <utility>
#include <vector>

#include "client/batch_gather.hpp"
#include "client/device_scan.hpp"
#include "client/device_stream.hpp"
#include "client/inspect.hpp"
#include "client/open_uri.hpp"
#include "client/profiled_scan.hpp"
#include "config/defaults.hpp"
#include "format/arrow_export.hpp"
#include "format/reader.hpp"
#include "format/shard.hpp"
#include "daemon/client.hpp"
#include "onecopy_build_config.h"

#define OC_API extern "C" __attribute__((visibility("default")))

struct onecopy_file {
  std::shared_ptr<oc::format::VortexFile> file;
};

struct onecopy_batches {
  std::unique_ptr<oc::client::BatchSet> set;
};

struct onecopy_cursor {
  std::shared_ptr<const oc::client::ScanCursor> cursor;
};

namespace {

int report(const oc::Error& e, char* err, size_t errlen) {
  if (err != nullptr && errlen > 0) {
    const std::string s = e.to_string();
    const size_t n = std::min(errlen - 1, s.size());
    std::memcpy(err, s.data(), n);
    err[n] = '\0';
  }
  return static_cast<int>(e.code()) + 1;
}

template <class F>
int guarded(char* err, size_t errlen, F&& f) {
  try {
    return f();
  } catch (...) {
    return report(oc::current_exception_error("onecopy"), err, errlen);
  }
}

std::vector<std::string> column_list(const char* const* columns, size_t ncolumns) {
  std::vector<std::string> out;
  for (size_t i = 0; columns != nullptr && i < ncolumns; ++i) out.emplace_back(columns[i]);
  return out;
}

// (begin, end) pairs of a C caller's `ranges`, as units of file 0.
std::vector<oc::format::Unit> unit_list(const uint64_t* ranges, size_t nranges) {
  std::vector<oc::format::Unit> units;
  for (size_t i = 0; i < nranges; ++i) units.push_back({0, ranges[2 * i], ranges[2 * i + 1]});
  return units;
}

oc::format::StringLayout strings_of(uint32_t flags) {
  return (flags & ONECOPY_STRING_OFFSETS) != 0 ? oc::format::StringLayout::offsets
                                               : oc::format::StringLayout::views;
}

// A daemon scan's request from a C caller's arguments: a row range (row_begin > 0 or
// row_end >= 0), a shard with its own start, or ranges resumed from (start_unit, start_rows);
// the daemon refuses a request with more than one (daemon/scan_request.cpp).
oc::daemon::RemoteScanOptions remote_options(const char* const* columns, size_t ncolumns, const char* filter,
                                             uint64_t batch_rows, int64_t row_begin, int64_t row_end,
                                             const onecopy_shard* shard, const uint64_t* ranges, size_t nranges,
                                             uint64_t start_unit, uint64_t start_rows) {
  oc::daemon::RemoteScanOptions o;
  o.columns = column_list(columns, ncolumns);
  if (filter) o.filter = filter;
  o.batch_rows = batch_rows;
  if (row_begin > 0 || row_end >= 0) {
    o.row_range = std::pair<uint64_t, uint64_t>(static_cast<uint64_t>(std::max<int64_t>(row_begin, 0)),
                                                row_end < 0 ? UINT64_MAX : static_cast<uint64_t>(row_end));
  }
  o.start = {start_unit, start_rows};
  if (shard != nullptr) {
    o.shard = oc::format::ShardSpec{.rank = shard->rank,
                                    .world_size = shard->world_size,
                                    .worker = shard->worker,
                                    .num_workers = shard->num_workers,
                                    .shuffle = shard->shuffle != 0,
                                    .seed = shard->seed,
                                    .epoch = shard->epoch};
    o.start = {shard->start_unit, shard->start_rows};
    o.unit_rows = shard->unit_rows;
  }
  for (size_t i = 0; i < nranges; ++i) o.ranges.emplace_back(ranges[2 * i], ranges[2 * i + 1]);
  return o;
}

// Starts the daemon scan @p o into @p out; with @p cursor, hands out its cursor.
int remote_scan_into(const char* socket, const char* uri, const oc::daemon::RemoteScanOptions& o,
                     ArrowArrayStream* out, onecopy_cursor** cursor, char* err, size_t errlen) {
  auto r = oc::daemon::remote_scan(oc::daemon::client_socket_path(socket ? socket : ""), uri, o, out);
  if (!r.ok()) return report(r.error(), err, errlen);
  if (cursor != nullptr) *cursor = new onecopy_cursor{std::move(*r)};
  return 0;
}

// A take() result as a Scan, so it leaves through the same Arrow stream export as scans do.
class OneBatch final : public oc::format::Scan {
 public:
  OneBatch(oc::format::ColumnPtr batch, oc::format::StringLayout strings)
      : batch_(std::move(batch)), dtype_(batch_->dtype), strings_(strings) {}
  oc::Result<std::optional<oc::format::ColumnPtr>> next_batch() override {
    if (!batch_) return std::optional<oc::format::ColumnPtr>();
    return std::optional<oc::format::ColumnPtr>(std::exchange(batch_, nullptr));
  }
  [[nodiscard]] const oc::format::DTypePtr& dtype() const override { return dtype_; }
  [[nodiscard]] oc::format::StringLayout strings() const override { return strings_; }
  [[nodiscard]] oc::format::ScanStats stats() const override { return {}; }

 private:
  oc::format::ColumnPtr batch_;
  oc::format::DTypePtr dtype_;
  oc::format::StringLayout strings_;
};

// Exports @p scan as @p out; with @p cursor, through a ProfiledScan reporting to a new cursor.
void export_profiled(std::unique_ptr<oc::format::Scan> scan, ArrowArrayStream* out,
                     onecopy_cursor** cursor) {
  if (cursor == nullptr) {
    oc::format::export_stream(std::move(scan), out);
    return;
  }
  auto c = std::make_shared<oc::client::ScanCursor>(0, oc::format::UnitPosition{});
  auto* handle = new onecopy_cursor{c};
  oc::format::export_stream(std::make_unique<oc::client::ProfiledScan>(std::move(scan), c), out);
  *cursor = handle;
}

}  // namespace

OC_API int onecopy_init(char* err, size_t errlen) {
  return guarded(err, errlen, [&] {
    auto r = oc::load_defaults_from_env();
    return r.ok() ? 0 : report(r.error(), err, errlen);
  });
}

OC_API int onecopy_open(const char* path, onecopy_file** out, char* err, size_t errlen) {
  return guarded(err, errlen, [&] {
    auto f = oc::client::open_uri(path);
    if (!f.ok()) return report(f.error(), err, errlen);
    *out = new onecopy_file{std::move(f).value()};
    return 0;
  });
}

OC_API void onecopy_close(onecopy_file* file) { delete file; }

OC_API uint64_t onecopy_row_count(const onecopy_file* file) { return file->file->row_count(); }

OC_API int onecopy_schema(const onecopy_file* file, uint32_t flags, ArrowSchema* out, char* err,
                          size_t errlen) {
  return guarded(err, errlen, [&] {
    auto r = oc::format::export_schema(*file->file->dtype(), "", strings_of(flags), out);
    return r.ok() ? 0 : report(r.error(), err, errlen);
  });
}

OC_API int onecopy_scan(const onecopy_file* file, const char* const* columns, size_t ncolumns,
                        const char* filter, uint64_t batch_rows, int64_t row_begin, int64_t row_end,
                        uint32_t flags, ArrowArrayStream* out, onecopy_cursor** cursor, char* err,
                        size_t errlen) {
  return guarded(err, errlen, [&] {
    oc::format::ScanOptions opts;
    opts.columns = column_list(columns, ncolumns);
    if (filter != nullptr) opts.filter = filter;
    opts.batch_rows = batch_rows;
    opts.strings = strings_of(flags);
    if (row_begin > 0 || row_end >= 0) {
      const uint64_t end = row_end < 0 ? file->file->row_count() : static_cast<uint64_t>(row_end);
      opts.row_range = std::make_pair(static_cast<uint64_t>(std::max<int64_t>(row_begin, 0)), end);
    }
    auto scan = file->file->scan(opts);
    if (!scan.ok()) return report(scan.error(), err, errlen);
    export_profiled(std::move(scan).value(), out, cursor);
    return 0;
  });
}

OC_API int onecopy_scan_device(const onecopy_file* file, int device, const char* const* columns, size_t ncolumns,
                               const char* filter, uint64_t batch_rows, int64_t row_begin, int64_t row_end,
                               const uint64_t* ranges, size_t nranges, uintptr_t consumer_stream,
                               ArrowDeviceArrayStream* out, onecopy_cursor** cursor, char* err, size_t errlen) {
  return guarded(err, errlen, [&] {
    oc::format::ScanOptions opts;
    opts.columns = column_list(columns, ncolumns);
    if (filter != nullptr) opts.filter = filter;
    opts.batch_rows = batch_rows;
    if (row_begin > 0 || row_end >= 0) {
      if (nranges > 0) return report(oc::Error(oc::Errc::invalid, "a scan of ranges takes no row range"), err, errlen);
      const uint64_t end = row_end < 0 ? file->file->row_count() : static_cast<uint64_t>(row_end);
      opts.row_range = std::make_pair(static_cast<uint64_t>(std::max<int64_t>(row_begin, 0)), end);
    }
    const bool reference = device == ONECOPY_DEVICE_HOST_REFERENCE;
    auto decoder = oc::client::DeviceChunkDecoder::create(
        device, reference ? oc::client::DeviceDecodes::host_reference : oc::client::DeviceDecodes::cuda);
    if (!decoder.ok()) return report(decoder.error(), err, errlen);
    std::unique_ptr<oc::format::Scan> scan;
    if (nranges == 0) {
      auto r = oc::client::scan_on_device(*file->file, opts, std::move(decoder).value());
      if (!r.ok()) return report(r.error(), err, errlen);
      scan = std::move(r).value();
    } else {
      auto r = oc::client::scan_units_on_device(file->file, opts, unit_list(ranges, nranges),
                                                std::move(decoder).value());
      if (!r.ok()) return report(r.error(), err, errlen);
      scan = std::move(r).value();
    }
    ArrowArrayStream inner{};
    export_profiled(std::move(scan), &inner, cursor);
    oc::client::wrap_device_stream(&inner, reference ? ARROW_DEVICE_CPU : ARROW_DEVICE_CUDA, device, out,
                                   consumer_stream);
    return 0;
  });
}

OC_API int onecopy_take(const onecopy_file* file, const char* const* columns, size_t ncolumns,
                        const uint64_t* rows, size_t nrows, uint32_t flags, ArrowArrayStream* out,
                        char* err, size_t errlen) {
  return guarded(err, errlen, [&] {
    const std::span<const uint64_t> idx(nrows == 0 ? nullptr : rows, nrows);
    auto batch = file->file->take(idx, column_list(columns, ncolumns), strings_of(flags));
    if (!batch.ok()) return report(batch.error(), err, errlen);
    oc::format::export_stream(std::make_unique<OneBatch>(std::move(batch).value(), strings_of(flags)),
                              out);
    return 0;
  });
}

OC_API int onecopy_batches_new(ArrowSchema* schema, ArrowArray* batches, size_t nbatches,
                               onecopy_batches** out, char* err, size_t errlen) {
  const std::span<ArrowArray> arrays(nbatches ? batches : nullptr, nbatches);
  // Everything moved in is released on every path: adopt owns the arrays it has moved (leaving
  // them released), and anything it has not reached (an allocation failed) is released here.
  struct ReleaseRest {
    ArrowSchema* schema;
    std::span<ArrowArray> arrays;
    ~ReleaseRest() {
      if (schema->release) schema->release(schema);
      for (ArrowArray& a : arrays) {
        if (a.release) a.release(&a);
      }
    }
  } rest{schema, arrays};
  return guarded(err, errlen, [&] {
    auto set = oc::client::BatchSet::adopt(*schema, arrays);
    if (!set.ok()) return report(set.error(), err, errlen);
    *out = new onecopy_batches{std::move(set).value()};
    return 0;
  });
}

OC_API uint64_t onecopy_batches_rows(const onecopy_batches* batches) { return batches->set->rows(); }

OC_API int onecopy_batches_take(const onecopy_batches* batches, const uint64_t* rows, size_t nrows,
                                ArrowArray* out, char* err, size_t errlen) {
  return guarded(err, errlen, [&] {
    auto r = batches->set->gather(std::span<const uint64_t>(nrows ? rows : nullptr, nrows), out);
    return r.ok() ? 0 : report(r.error(), err, errlen);
  });
}

OC_API void onecopy_batches_free(onecopy_batches* batches) { delete batches; }

namespace {

// A malloc'd copy of @p values, for the caller to free with onecopy_free_units.
uint64_t* malloc_copy(const std::vector<uint64_t>& values) {
  auto* out = static_cast<uint64_t*>(std::malloc(std::max<size_t>(values.size(), 1) * 8));
  if (out == nullptr) throw std::bad_alloc();
  std::copy(values.begin(), values.end(), out);
  return out;
}

}  // namespace

OC_API int onecopy_file_units(const onecopy_file* file, uint64_t max_rows, uint64_t** out,
                              size_t* n, char* err, size_t errlen) {
  return guarded(err, errlen, [&] {
    auto units = oc::format::file_units(*file->file, 0,
                                        max_rows ? max_rows : oc::defaults().shard_unit_rows);
    if (!units.ok()) return report(units.error(), err, errlen);
    std::vector<uint64_t> flat;
    for (const auto& u : *units) flat.insert(flat.end(), {u.begin, u.end});
    *out = malloc_copy(flat);
    *n = units->size();
    return 0;
  });
}

OC_API int onecopy_shard_units(const uint64_t* units, size_t nunits, uint32_t rank,
                               uint32_t world_size, uint32_t worker, uint32_t num_workers,
                               int shuffle, uint64_t seed, uint64_t epoch, uint64_t** out,
                               size_t* n, char* err, size_t errlen) {
  return guarded(err, errlen, [&] {
    const oc::format::ShardSpec spec{rank, world_size, worker, num_workers, shuffle != 0, seed,
                                     epoch};
    if (auto v = oc::format::validate(spec); !v.ok()) return report(v.error(), err, errlen);
    std::vector<oc::format::Unit> all;
    for (size_t i = 0; i < nunits; ++i) {
      if (units[3 * i] > UINT32_MAX) {
        return report(oc::Error(oc::Errc::invalid, "a unit's file index is over 2^32"), err,
                      errlen);
      }
      all.push_back({static_cast<uint32_t>(units[3 * i]), units[3 * i + 1], units[3 * i + 2]});
    }
    std::vector<uint64_t> flat;
    const auto mine = oc::format::shard_units(all, spec);
    for (const auto& u : mine) flat.insert(flat.end(), {u.file, u.begin, u.end});
    *out = malloc_copy(flat);
    *n = mine.size();
    return 0;
  });
}

OC_API void onecopy_free_units(uint64_t* units) { std::free(units); }

namespace {

// @p names joined, each ended by '\n', as a malloc'd C string.
char* malloc_lines(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += n + "\n";
  auto* out = static_cast<char*>(std::malloc(s.size() + 1));
  if (out == nullptr) throw std::bad_alloc();
  std::memcpy(out, s.c_str(), s.size() + 1);
  return out;
}

}  // namespace

OC_API int onecopy_expand(const char* pattern, char** out, char* err, size_t errlen) {
  return guarded(err, errlen, [&] {
    auto names = oc::client::expand_uri(pattern);
    if (!names.ok()) return report(names.error(), err, errlen);
    *out = malloc_lines(*names);
    return 0;
  });
}

OC_API int onecopy_daemon_list(const char* socket, const char* pattern, char** out, char* err,
                               size_t errlen) {
  return guarded(err, errlen, [&] {
    auto names =
        oc::daemon::remote_list(oc::daemon::client_socket_path(socket ? socket : ""), pattern);
    if (!names.ok()) return report(names.error(), err, errlen);
    *out = malloc_lines(*names);
    return 0;
  });
}

OC_API int onecopy_daemon_units(const char* socket, const char* uri, uint64_t max_rows,
                                uint64_t** out, size_t* n, char* err, size_t errlen) {
  return guarded(err, errlen, [&] {
    auto units = oc::daemon::remote_units(oc::daemon::client_socket_path(socket ? socket : ""), uri,
                                          max_rows ? max_rows : oc::defaults().shard_unit_rows);
    if (!units.ok()) return report(units.error(), err, errlen);
    std::vector<uint64_t> flat;
    for (const auto& [b, e] : *units) flat.insert(flat.end(), {b, e});
    *out = malloc_copy(flat);
    *n = units->size();
    return 0;
  });
}

OC_API int onecopy_daemon_socket(const char* explicit_path, char* out, size_t outlen, char* err,
                                 size_t errlen) {
  return guarded(err, errlen, [&] {
    auto r = oc::daemon::serving_daemon_socket(explicit_path ? explicit_path : "");
    if (!r.ok()) return report(r.error(), err, errlen);
    const std::string path = r->value_or("");
    if (path.size() >= outlen) {
      return report(OC_ERROR(oc::Errc::invalid, "a socket path of {} bytes does not fit in {}",
                             path.size(), outlen),
                    err, errlen);
    }
    std::memcpy(out, path.c_str(), path.size() + 1);
    return 0;
  });
}

OC_API int onecopy_daemon_status_json(const char* socket, char** out, char* err,
                                      size_t errlen) {
  return guarded(err, errlen, [&] {
    auto r = oc::daemon::query_status(oc::daemon::client_socket_path(socket ? socket : ""));
    if (!r.ok()) return report(r.error(), err, errlen);
    const std::string s = oc::daemon::status_json(*r);
    *out = static_cast<char*>(std::malloc(s.size() + 1));
    if (*out == nullptr) throw std::bad_alloc();
    std::memcpy(*out, s.c_str(), s.size() + 1);
    return 0;
  });
}

OC_API int onecopy_daemon_scan(const char* socket, const char* uri, const char* const* columns,
                               size_t ncolumns, const char* filter, uint64_t batch_rows,
                               int64_t row_begin, int64_t row_end, ArrowArrayStream* out,
                               char* err, size_t errlen) {
  return onecopy_daemon_scan2(socket, uri, columns, ncolumns, filter, batch_rows, row_begin,
                              row_end, nullptr, 0, out, nullptr, err, errlen);
}

OC_API int onecopy_daemon_scan2(const char* socket, const char* uri, const char* const* columns,
                                size_t ncolumns, const char* filter, uint64_t batch_rows,
                                int64_t row_begin, int64_t row_end, const onecopy_shard* shard,
                                uint32_t flags, ArrowArrayStream* out, onecopy_cursor** cursor,
                                char* err, size_t errlen) {
  return guarded(err, errlen, [&] {
    auto o = remote_options(columns, ncolumns, filter, batch_rows, row_begin, row_end, shard, nullptr, 0, 0, 0);
    o.strings = strings_of(flags);
    return remote_scan_into(socket, uri, o, out, cursor, err, errlen);
  });
}

OC_API int onecopy_daemon_scan_device(const char* socket, const char* uri, const char* const* columns,
                                      size_t ncolumns, const char* filter, uint64_t batch_rows, int64_t row_begin,
                                      int64_t row_end, const onecopy_shard* shard, const uint64_t* ranges,
                                      size_t nranges, uint64_t start_unit, uint64_t start_rows, int device,
                                      uintptr_t consumer_stream, ArrowDeviceArrayStream* out,
                                      onecopy_cursor** cursor, char* err, size_t errlen) {
  return guarded(err, errlen, [&] {
    if (device < 0) return report(oc::Error(oc::Errc::invalid, "a device scan needs a CUDA device index"), err, errlen);
    auto o = remote_options(columns, ncolumns, filter, batch_rows, row_begin, row_end, shard, ranges, nranges,
                            start_unit, start_rows);
    o.strings = oc::format::StringLayout::offsets;
    o.device = device;
    o.consumer_stream = consumer_stream;
    ArrowArrayStream inner{};
    if (const int rc = remote_scan_into(socket, uri, o, &inner, cursor, err, errlen); rc != 0) return rc;
    oc::client::wrap_device_stream(&inner, ARROW_DEVICE_CUDA, device, out);
    return 0;
  });
}

OC_API int onecopy_daemon_scan_ranges(const char* socket, const char* uri,
                                      const char* const* columns, size_t ncolumns,
                                      const char* filter, uint64_t batch_rows,
                                      const uint64_t* ranges, size_t nranges, uint64_t start_unit,
                                      uint64_t start_rows, uint32_t flags, ArrowArrayStream* out,
                                      onecopy_cursor** cursor, char* err, size_t errlen) {
  return guarded(err, errlen, [&] {
    auto o = remote_options(columns, ncolumns, filter, batch_rows, 0, -1, nullptr, ranges, nranges, start_unit,
                            start_rows);
    o.strings = strings_of(flags);
    return remote_scan_into(socket, uri, o, out, cursor, err, errlen);
  });
}

OC_API int onecopy_scan_ranges(const onecopy_file* file, const char* const* columns,
                               size_t ncolumns, const char* filter, uint64_t batch_rows,
                               const uint64_t* ranges, size_t nranges, uint32_t flags,
                               ArrowArrayStream* out, onecopy_cursor** cursor, char* err,
                               size_t errlen) {
  return guarded(err, errlen, [&] {
    oc::format::ScanOptions opts;
    opts.columns = column_list(columns, ncolumns);
    if (filter != nullptr) opts.filter = filter;
    opts.batch_rows = batch_rows;
    opts.strings = strings_of(flags);
    auto scan = oc::format::scan_units(file->file, std::move(opts), unit_list(ranges, nranges), {});
    if (!scan.ok()) return report(scan.error(), err, errlen);
    export_profiled(std::move(scan).value(), out, cursor);
    return 0;
  });
}

OC_API void onecopy_cursor_position(const onecopy_cursor* cursor, uint64_t* unit, uint64_t* rows) {
  const oc::format::UnitPosition p = cursor->cursor->position();
  *unit = p.unit;
  *rows = p.rows;
}

OC_API uint64_t onecopy_cursor_units(const onecopy_cursor* cursor) {
  return cursor->cursor->units();
}

OC_API int onecopy_cursor_error(const onecopy_cursor* cursor, char* err, size_t errlen) {
  const auto e = cursor->cursor->error();
  return e ? report(*e, err, errlen) : 0;
}

OC_API void onecopy_cursor_stats(const onecopy_cursor* cursor, onecopy_scan_stats* out) {
  const oc::format::ScanProfile p = cursor->cursor->profile();
  *out = onecopy_scan_stats{p.rows,       p.batches,          p.bytes_read,   p.storage_ns,
                            p.decode_ns,  p.copy_ns,          p.consumer_wait_ns,
                            p.pool_wait_ns, p.wait_ns,        p.wall_ns,      p.complete ? 1 : 0};
}

OC_API const char* onecopy_bottleneck(const onecopy_scan_stats* stats) {
  oc::format::ScanProfile p;
  p.storage_ns = stats->storage_ns;
  p.decode_ns = stats->decode_ns;
  p.copy_ns = stats->copy_ns;
  p.pool_wait_ns = stats->pool_wait_ns;
  p.consumer_wait_ns = stats->consumer_wait_ns;
  return oc::format::bottleneck(p);
}

OC_API void onecopy_cursor_free(onecopy_cursor* cursor) { delete cursor; }

OC_API int onecopy_inspect_json(const onecopy_file* file, char** out, char* err, size_t errlen) {
  return guarded(err, errlen, [&] {
    std::ostringstream os;
    auto r = oc::client::inspect(*file->file, os, true);
    if (!r.ok()) return report(r.error(), err, errlen);
    const std::string s = os.str();
    *out = static_cast<char*>(std::malloc(s.size() + 1));
    if (*out == nullptr) throw std::bad_alloc();
    std::memcpy(*out, s.c_str(), s.size() + 1);
    return 0;
  });
}

OC_API void onecopy_free_string(char* s) { std::free(s); }

OC_API const char* onecopy_version(void) { return OC_VERSION; }

namespace {

// Capsule destructors may run while a Python exception is unwinding; PyCapsule_GetPointer with
// the right name neither reads nor disturbs the error indicator, so it is safe there.
void* capsule_pointer(void* capsule, const char* name) {
  using GetPointer = void* (*)(void*, const char*);
  static auto fn = reinterpret_cast<GetPointer>(dlsym(RTLD_DEFAULT, "PyCapsule_GetPointer"));
  return fn != nullptr ? fn(capsule, name) : nullptr;
}

}  // namespace

OC_API ArrowArrayStream* onecopy_stream_new(void) {
  return static_cast<ArrowArrayStream*>(std::calloc(1, sizeof(ArrowArrayStream)));
}

OC_API void onecopy_stream_free(ArrowArrayStream* stream) {
  if (stream == nullptr) return;
  if (stream->release != nullptr) stream->release(stream);
  std::free(stream);
}

OC_API ArrowSchema* onecopy_schema_new(void) {
  return static_cast<ArrowSchema*>(std::calloc(1, sizeof(ArrowSchema)));
}

OC_API void onecopy_stream_capsule_destructor(void* capsule) {
  onecopy_stream_free(static_cast<ArrowArrayStream*>(capsule_pointer(capsule, "arrow_array_stream")));
}

OC_API void onecopy_schema_capsule_destructor(void* capsule) {
  auto* schema = static_cast<ArrowSchema*>(capsule_pointer(capsule, "arrow_schema"));
  if (schema == nullptr) return;
  if (schema->release != nullptr) schema->release(schema);
  std::free(schema);
}
