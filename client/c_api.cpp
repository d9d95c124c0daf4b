// SPDX-License-Identifier: Apache-2.0
// The C API edge: Result errors become codes and messages; exceptions never cross it.
#include "client/c_api.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <optional>
#include <span>
#include <sstream>
#include <utility>
#include <vector>

#include "client/batch_gather.hpp"
#include "client/inspect.hpp"
#include "client/profiled_scan.hpp"
#include "client/remote/client.hpp"
#include "config/crc32c.hpp"
#include "config/defaults.hpp"
#include "format/arrow_export.hpp"
#include "format/reader.hpp"
#include "format/scan_request.hpp"
#include "format/shard.hpp"
#include "kernels/device_scan.hpp"
#include "kernels/device_stream.hpp"
#include "net/dataset.hpp"
#include "net/open_uri.hpp"
#include "net/s3_source.hpp"
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

oc::format::StringLayout strings_of(uint32_t flags) {
  return (flags & ONECOPY_STRING_OFFSETS) != 0 ? oc::format::StringLayout::offsets
                                               : oc::format::StringLayout::views;
}

// A flag a call does not take (one from a newer header, or a scan's flag on a take) is refused,
// never dropped: the caller would get another result than it asked for, without a word.
oc::Result<void> check_flags(uint32_t flags, uint32_t known, const char* call) {
  OC_EXPECT((flags & ~known) == 0, unsupported,
            "{} flags {:#x} include some a {} does not take (this library, {}, knows {:#x} there)",
            call, flags, call, OC_VERSION, known);
  return {};
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

// The request a C caller's options describe. Fields past the caller's `size` keep their
// defaults; fields past this library's struct must be zero (a newer caller asking for something
// this library cannot do is refused, not ignored).
oc::Result<oc::format::ScanRequest> request_of(const onecopy_scan_options* o) {
  OC_EXPECT(o != nullptr, invalid, "no scan options");
  constexpr size_t kKnown = sizeof(onecopy_scan_options);
  OC_EXPECT(o->size >= offsetof(onecopy_scan_options, consumer_stream) + sizeof(uintptr_t), invalid,
            "scan options of {} bytes: set size to sizeof(onecopy_scan_options), {} here", o->size,
            kKnown);
  if (o->size > kKnown) {
    const auto* tail = reinterpret_cast<const uint8_t*>(o) + kKnown;
    OC_EXPECT(std::all_of(tail, tail + (o->size - kKnown), [](uint8_t b) { return b == 0; }),
              unsupported,
              "the scan options set fields this library ({}, {} bytes of options) does not know",
              OC_VERSION, kKnown);
  }
  OC_TRY(check_flags(o->flags, ONECOPY_STRING_OFFSETS | ONECOPY_ROW_NUMBERS, "scan"));
  oc::format::ScanRequest r;
  r.columns = column_list(o->columns, o->ncolumns);
  if (o->filter != nullptr) r.filter = o->filter;
  r.batch_rows = o->batch_rows;
  r.strings = strings_of(o->flags);
  r.row_numbers = (o->flags & ONECOPY_ROW_NUMBERS) != 0;
  r.device =
      o->device == ONECOPY_DEVICE_HOST_REFERENCE ? oc::format::kHostReferenceDevice : o->device;
  r.start = {o->start_unit, o->start_rows};
  std::optional<oc::format::RowRange> rows;
  if (o->row_range != nullptr) rows = oc::format::RowRange{o->row_range[0], o->row_range[1]};
  std::optional<oc::format::ShardSelection> shard;
  if (o->shard != nullptr) {
    shard = oc::format::ShardSelection{{.rank = o->shard->rank,
                                        .world_size = o->shard->world_size,
                                        .worker = o->shard->worker,
                                        .num_workers = o->shard->num_workers,
                                        .shuffle = o->shard->shuffle != 0,
                                        .seed = o->shard->seed,
                                        .epoch = o->shard->epoch},
                                       o->shard->unit_rows};
  }
  std::optional<oc::format::RangeSelection> ranges;
  if (o->ranges != nullptr) {
    ranges.emplace();
    ranges->ranges.reserve(o->nranges);
    for (size_t i = 0; i < o->nranges; ++i) {
      ranges->ranges.emplace_back(o->ranges[2 * i], o->ranges[2 * i + 1]);
    }
  }
  std::optional<oc::format::TakeRows> take;
  if (o->size >= offsetof(onecopy_scan_options, ntake_rows) + sizeof(size_t) &&
      o->take_rows != nullptr) {
    take.emplace();
    take->rows.assign(o->take_rows, o->take_rows + o->ntake_rows);
  }
  OC_ASSIGN_OR_RETURN(r.selection, oc::format::one_selection(rows, shard, ranges, take));
  return r;
}

// A scan in this process: planned here, onto a device decoder when it asks for a device.
int scan_here(const onecopy_file& file, const oc::format::ScanRequest& request,
              uintptr_t consumer_stream, ArrowArrayStream* out, ArrowDeviceArrayStream* device_out,
              onecopy_cursor** cursor, char* err, size_t errlen) {
  oc::format::PlanOptions how;
  const bool reference = request.device == oc::format::kHostReferenceDevice;
  if (request.device != oc::format::kHostDevice) {
    auto decoder = oc::kernels::DeviceChunkDecoder::create(
        reference ? -1 : request.device,
        reference ? oc::kernels::DeviceDecodes::host_reference : oc::kernels::DeviceDecodes::cuda);
    if (!decoder.ok()) return report(decoder.error(), err, errlen);
    how.device_decoder = std::move(decoder).value();
  }
  auto planned = oc::format::plan(file.file, request, how);
  if (!planned.ok()) return report(planned.error(), err, errlen);
  if (request.device == oc::format::kHostDevice) {
    export_profiled(std::move(planned->scan), out, cursor);
    return 0;
  }
  ArrowArrayStream inner{};
  export_profiled(std::move(planned->scan), &inner, cursor);
  oc::kernels::wrap_device_stream(&inner, reference ? ARROW_DEVICE_CPU : ARROW_DEVICE_CUDA,
                                  reference ? -1 : request.device, device_out, consumer_stream);
  return 0;
}

// A scan in onecopyd, which plans it; a device scan's batches arrive in the device's memory.
int scan_in_daemon(const onecopy_source& src, const oc::format::ScanRequest& request,
                   uintptr_t consumer_stream, ArrowArrayStream* out,
                   ArrowDeviceArrayStream* device_out, onecopy_cursor** cursor, char* err,
                   size_t errlen) {
  if (src.uri == nullptr) {
    return report(OC_ERROR(oc::Errc::invalid, "a scan in onecopyd needs the uri it reads"), err,
                  errlen);
  }
  const bool on_device = request.device != oc::format::kHostDevice;
  ArrowArrayStream inner{};
  auto r = oc::client::remote_scan(oc::client::client_socket_path(src.socket ? src.socket : ""),
                                   src.uri, request, consumer_stream, on_device ? &inner : out);
  if (!r.ok()) return report(r.error(), err, errlen);
  if (cursor != nullptr) *cursor = new onecopy_cursor{std::move(*r)};
  if (on_device)
    oc::kernels::wrap_device_stream(&inner, ARROW_DEVICE_CUDA, request.device, device_out);
  return 0;
}

}  // namespace

OC_API int onecopy_init(char* err, size_t errlen) {
  return guarded(err, errlen, [&] {
    auto r = oc::load_defaults_from_env();
    if (!r.ok()) return report(r.error(), err, errlen);
    // A changed AWS_* environment (endpoint, region, keys) reaches the next S3 read too.
    oc::net::forget_environment_client();
    return 0;
  });
}

OC_API int onecopy_open(const char* path, onecopy_file** out, char* err, size_t errlen) {
  return guarded(err, errlen, [&] {
    auto f = oc::net::open_uri(path);
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
    if (auto known = check_flags(flags, ONECOPY_STRING_OFFSETS, "schema"); !known.ok())
      return report(known.error(), err, errlen);
    auto r = oc::format::export_schema(*file->file->dtype(), "", strings_of(flags), out);
    return r.ok() ? 0 : report(r.error(), err, errlen);
  });
}

OC_API int onecopy_scan(const onecopy_source* source, const onecopy_scan_options* options,
                        ArrowArrayStream* out, ArrowDeviceArrayStream* device_out,
                        onecopy_cursor** cursor, char* err, size_t errlen) {
  return guarded(err, errlen, [&] {
    auto request = request_of(options);
    if (!request.ok()) return report(request.error(), err, errlen);
    const bool on_device = request->device != oc::format::kHostDevice;
    if (source == nullptr || (on_device ? device_out == nullptr : out == nullptr)) {
      return report(OC_ERROR(oc::Errc::invalid,
                             "onecopy_scan needs a source and, for a {} scan, "
                             "{}",
                             on_device ? "device" : "host", on_device ? "device_out" : "out"),
                    err, errlen);
    }
    if (source->file != nullptr) {
      return scan_here(*source->file, *request, options->consumer_stream, out, device_out, cursor,
                       err, errlen);
    }
    return scan_in_daemon(*source, *request, options->consumer_stream, out, device_out, cursor, err,
                          errlen);
  });
}

OC_API int onecopy_scan_request_json(const onecopy_scan_options* options, char** out, char* err,
                                     size_t errlen) {
  return guarded(err, errlen, [&] {
    auto request = request_of(options);
    if (!request.ok()) return report(request.error(), err, errlen);
    if (auto valid = request->validate(); !valid.ok()) return report(valid.error(), err, errlen);
    const std::string s = request->to_json();
    *out = static_cast<char*>(std::malloc(s.size() + 1));
    if (*out == nullptr) throw std::bad_alloc();
    std::memcpy(*out, s.c_str(), s.size() + 1);
    return 0;
  });
}

OC_API int onecopy_take(const onecopy_file* file, const char* const* columns, size_t ncolumns,
                        const uint64_t* rows, size_t nrows, uint32_t flags, ArrowArrayStream* out,
                        char* err, size_t errlen) {
  return guarded(err, errlen, [&] {
    // ONECOPY_ROW_NUMBERS is refused too: a take delivers the rows its caller named.
    if (auto known = check_flags(flags, ONECOPY_STRING_OFFSETS, "take"); !known.ok())
      return report(known.error(), err, errlen);
    const std::span<const uint64_t> idx(nrows == 0 ? nullptr : rows, nrows);
    auto batch = file->file->take(idx, column_list(columns, ncolumns), strings_of(flags));
    if (!batch.ok()) return report(batch.error(), err, errlen);
    oc::format::export_stream(
        std::make_unique<OneBatch>(std::move(batch).value(), strings_of(flags)), out);
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

OC_API uint64_t onecopy_batches_rows(const onecopy_batches* batches) {
  return batches->set->rows();
}

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
    const oc::format::ShardSpec spec{rank,         world_size, worker, num_workers,
                                     shuffle != 0, seed,       epoch};
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
    auto names = oc::net::expand_uri(pattern);
    if (!names.ok()) return report(names.error(), err, errlen);
    *out = malloc_lines(*names);
    return 0;
  });
}

OC_API int onecopy_dataset(const char* pattern, uint64_t unit_rows, int footers, char** out,
                           char* err, size_t errlen) {
  return guarded(err, errlen, [&] {
    oc::net::DatasetOptions o;
    o.unit_rows = unit_rows ? unit_rows : oc::defaults().shard_unit_rows;
    o.footers = footers != 0;
    auto index = oc::net::index_dataset(pattern, o);
    if (!index.ok()) return report(index.error(), err, errlen);
    const std::string s = oc::client::dataset_json(*index);
    *out = static_cast<char*>(std::malloc(s.size() + 1));
    if (*out == nullptr) throw std::bad_alloc();
    std::memcpy(*out, s.c_str(), s.size() + 1);
    return 0;
  });
}

OC_API uint32_t onecopy_crc32c(const uint8_t* data, size_t len) { return oc::crc32c({data, len}); }

OC_API int onecopy_daemon_list(const char* socket, const char* pattern, char** out, char* err,
                               size_t errlen) {
  return guarded(err, errlen, [&] {
    auto names =
        oc::client::remote_list(oc::client::client_socket_path(socket ? socket : ""), pattern);
    if (!names.ok()) return report(names.error(), err, errlen);
    *out = malloc_lines(*names);
    return 0;
  });
}

OC_API int onecopy_daemon_dataset(const char* socket, const char* pattern, uint64_t unit_rows,
                                  int footers, char** out, char* err, size_t errlen) {
  return guarded(err, errlen, [&] {
    auto index = oc::client::remote_dataset(
        oc::client::client_socket_path(socket ? socket : ""), pattern,
        unit_rows ? unit_rows : oc::defaults().shard_unit_rows, footers != 0);
    if (!index.ok()) return report(index.error(), err, errlen);
    const std::string s = oc::client::dataset_json(*index);
    *out = static_cast<char*>(std::malloc(s.size() + 1));
    if (*out == nullptr) throw std::bad_alloc();
    std::memcpy(*out, s.c_str(), s.size() + 1);
    return 0;
  });
}

OC_API int onecopy_daemon_units(const char* socket, const char* uri, uint64_t max_rows,
                                uint64_t** out, size_t* n, char* err, size_t errlen) {
  return guarded(err, errlen, [&] {
    auto units = oc::client::remote_units(oc::client::client_socket_path(socket ? socket : ""), uri,
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
    auto r = oc::client::serving_daemon_socket(explicit_path ? explicit_path : "");
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

OC_API int onecopy_daemon_status_json(const char* socket, char** out, char* err, size_t errlen) {
  return guarded(err, errlen, [&] {
    auto r = oc::client::query_status(oc::client::client_socket_path(socket ? socket : ""));
    if (!r.ok()) return report(r.error(), err, errlen);
    const std::string s = oc::daemon::status_json(*r);
    *out = static_cast<char*>(std::malloc(s.size() + 1));
    if (*out == nullptr) throw std::bad_alloc();
    std::memcpy(*out, s.c_str(), s.size() + 1);
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
  *out = onecopy_scan_stats{p.rows,      p.batches, p.bytes_read,       p.storage_ns,
                            p.decode_ns, p.copy_ns, p.consumer_wait_ns, p.pool_wait_ns,
                            p.wait_ns,   p.wall_ns, p.complete ? 1 : 0};
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
    auto r = oc::client::inspect(*file->file, os, /*json=*/true, /*verbose=*/true);
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
  onecopy_stream_free(
      static_cast<ArrowArrayStream*>(capsule_pointer(capsule, "arrow_array_stream")));
}

OC_API void onecopy_schema_capsule_destructor(void* capsule) {
  auto* schema = static_cast<ArrowSchema*>(capsule_pointer(capsule, "arrow_schema"));
  if (schema == nullptr) return;
  if (schema->release != nullptr) schema->release(schema);
  std::free(schema);
}
