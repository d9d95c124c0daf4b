/* SPDX-License-Identifier: Apache-2.0 */
/* onecopy's C API: open Vortex files and scan them as Arrow C streams.
 *
 * Every function that can fail returns 0 on success or a positive error class (ONECOPY_E_*)
 * and writes a NUL-terminated message into `err` (at most `errlen` bytes). Results cross the
 * boundary through the Arrow C Data and Stream interfaces without copies. Thread-safe: distinct
 * files and streams may be used from distinct threads. */
#ifndef ONECOPY_C_API_H
#define ONECOPY_C_API_H

#include <stddef.h>
#include <stdint.h>

#include "format/arrow_c_abi.h"
#include "kernels/device_export_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Error classes: Errc (config/error.hpp) + 1. */
enum {
  ONECOPY_OK = 0,
  ONECOPY_E_IO = 1,
  ONECOPY_E_TIMEOUT = 2,
  ONECOPY_E_PROTOCOL = 3,
  ONECOPY_E_CORRUPT = 4,
  ONECOPY_E_INVALID = 5,
  ONECOPY_E_UNSUPPORTED = 6,
  ONECOPY_E_CUDA = 7,
  ONECOPY_E_NOT_FOUND = 8,
  ONECOPY_E_OUT_OF_MEMORY = 9,
  ONECOPY_E_CANCELLED = 10,
  ONECOPY_E_DENIED = 11, /* not granted: a file, object or host the caller may not read */
};

/* Flags of the schema, scan and take calls (`flags`, 0 for none). A flag a call does not take
 * (one from a newer header, or ONECOPY_ROW_NUMBERS outside a scan) fails it with
 * ONECOPY_E_UNSUPPORTED. */
enum {
  /* Strings and binaries as i32 offsets into one bytes buffer (formats "u", "z"), for consumers
   * that index the bytes, instead of Arrow string views ("vu", "vz": the default, which copies
   * no value where the file holds views or a dictionary). */
  ONECOPY_STRING_OFFSETS = 1,
  /* Scans only: a last column "_row_number" (u64) holds each delivered row's number in the
   * file, so that a caller learns which rows its filter kept. Host scans, not a take. */
  ONECOPY_ROW_NUMBERS = 2,
};

typedef struct onecopy_file onecopy_file;

/* How far a scan's stream has got, and where its time went. It is separate from the stream
 * because Arrow consumers move streams into their own structs (pyarrow does); the cursor stays
 * valid, and is updated by the stream wherever it went, until onecopy_cursor_free. */
typedef struct onecopy_cursor onecopy_cursor;

/* Loads ONECOPY_* environment overrides and makes the next S3 read take its endpoint, region and
 * credentials from the AWS_* environment again; call before anything else, and after changing
 * the environment. */
int onecopy_init(char* err, size_t errlen);

/* Opens the Vortex file at `path`; release with onecopy_close. */
int onecopy_open(const char* path, onecopy_file** out, char* err, size_t errlen);
void onecopy_close(onecopy_file* file);

uint64_t onecopy_row_count(const onecopy_file* file);

/* The file's schema (a struct for tables), strings as `flags` say. The caller releases `out`. */
int onecopy_schema(const onecopy_file* file, uint32_t flags, struct ArrowSchema* out, char* err,
                   size_t errlen);

/* ---- Scans: one request (onecopy_scan_options), one entry point (onecopy_scan), in this
 * process or in onecopyd. The options are format/scan_request.hpp's ScanRequest. */

/* Where a scan's batches go (onecopy_scan_options.device): host memory, a CUDA device number
 * (0, 1, ...), or the host reference of a device scan: the device scan's own steps (its fused
 * plans, gathers and placement) run on the host with the kernels' host executors, batches on
 * ARROW_DEVICE_CPU; it checks everything above the CUDA calls where there is no GPU. */
#define ONECOPY_DEVICE_HOST (-1)
#define ONECOPY_DEVICE_HOST_REFERENCE (-2)

/* One shard of a sharded reading (format/shard.hpp; daemon/PROTOCOL.md "Sharding and
 * resuming"): shard (rank, worker) of (world_size, num_workers) reads its units, dealt in an
 * order drawn from (seed, epoch) when `shuffle` is non-zero. Units are at most `unit_rows` rows
 * (0: the shard_unit_rows knob where the scan is planned: onecopyd's, or this process's). */
typedef struct onecopy_shard {
  uint32_t rank, world_size, worker, num_workers;
  int shuffle;
  uint64_t seed, epoch;
  uint64_t unit_rows;
} onecopy_shard;

/* A scan. Zero-initialise it, set `size` to sizeof(onecopy_scan_options), then what differs from
 * the defaults: every column, every row, natural batches, string views, host memory. The
 * library reads the fields that `size` covers; a larger struct (a newer caller) is accepted when
 * the fields it does not know are zero.
 *
 * Which rows: every row, or one of a row range, a shard, explicit ranges and the rows of a take
 * (more than one is ONECOPY_E_INVALID, naming them). A shard and ranges are read as units and
 * report positions. A take reads `take_rows` in that order, repeats kept, as onecopy_take does
 * (only the bytes those rows need), with no filter and on the host; an index at or past the row
 * count fails the stream's first get_next. */
typedef struct onecopy_scan_options {
  size_t size;
  const char* const* columns; /* top-level fields in output order; NULL or 0: all */
  size_t ncolumns;
  const char* filter;         /* SQL WHERE predicate (format/expr.hpp); NULL or "": every row */
  uint64_t batch_rows;        /* the largest batch; 0: the file's natural splits */
  uint32_t flags;             /* ONECOPY_STRING_OFFSETS (device: always), ONECOPY_ROW_NUMBERS */
  const uint64_t* row_range;  /* NULL, or {begin, end}: rows [begin, end), end UINT64_MAX: all */
  const onecopy_shard* shard; /* NULL, or the shard whose units are read */
  const uint64_t* ranges;     /* NULL, or 2 * nranges values: (begin, end) pairs, in order */
  size_t nranges;
  uint64_t start_unit, start_rows; /* a shard's or ranges' start: a position a cursor reported */
  int device;                      /* ONECOPY_DEVICE_HOST, a CUDA device or ..._HOST_REFERENCE */
  uintptr_t consumer_stream; /* a device scan's consumer (a cudaStream_t; 0: the whole device):
                              * a batch's memory is reused only after the work queued on it by
                              * the batch's release has run */
  const uint64_t* take_rows; /* NULL, or ntake_rows row numbers: a take of them, in this order */
  size_t ntake_rows;
} onecopy_scan_options;

/* What a scan reads: an open file, read in this process, or a file or URL onecopyd reads. */
typedef struct onecopy_source {
  const onecopy_file* file; /* in this process; NULL for onecopyd, and then: */
  const char* socket;       /* onecopyd's socket (NULL or "": $ONECOPY_SOCKET, else the default) */
  const char* uri;          /* a local path (opened here, its descriptor passed) or an s3://,
                             * rados:// or http(s) URL the daemon reads as its policy grants */
} onecopy_source;

/* Starts the scan `options` of `source`. A host scan (device ONECOPY_DEVICE_HOST) fills `out`,
 * an Arrow C stream of record batches that stays valid after onecopy_close and that the caller
 * releases; a device scan fills `device_out`, an Arrow C Device stream (client/device_scan.hpp:
 * every flat chunk a fused plan covers decodes on the GPU, the rest on the CPU and is copied
 * over, strings as offsets; ONECOPY_E_CUDA, saying why, without such a device). A filter that
 * does not parse or bind, a malformed selection (a reversed range, a bad shard, a start without
 * units) or a column that does not exist fails here, with a message that says what is wrong.
 * With `cursor` non-NULL, `*cursor` receives the scan's cursor (position, stats, error; in this
 * process its position stays 0, 0); free it with onecopy_cursor_free. Through onecopyd, batches
 * are views of the daemon's read-only slabs, each released to it when the consumer releases the
 * array; when the daemon goes away mid-scan, get_next fails with EIO and onecopy_cursor_error
 * reports ONECOPY_E_IO, "daemon connection lost: ...". */
int onecopy_scan(const onecopy_source* source, const onecopy_scan_options* options,
                 struct ArrowArrayStream* out, struct ArrowDeviceArrayStream* device_out,
                 onecopy_cursor** cursor, char* err, size_t errlen);

/* The request `options` describe, checked as onecopy_scan checks it before it plans (a malformed
 * selection fails here with the same message), as one JSON object (format/scan_request.hpp
 * ScanRequest::to_json): what every layer hands the planner. Free `*out` with
 * onecopy_free_string. */
int onecopy_scan_request_json(const onecopy_scan_options* options, char** out, char* err,
                              size_t errlen);

/* Reads rows `rows[0..nrows)` of `columns` (NULL or ncolumns == 0: all), in the order given
 * (indices may be unsorted and repeat), into a stream of exactly one batch. An index at or past
 * the row count fails with ONECOPY_E_INVALID; `flags` as onecopy_scan's. The stream stays valid
 * after onecopy_close; the caller releases it. */
int onecopy_take(const onecopy_file* file, const char* const* columns, size_t ncolumns,
                 const uint64_t* rows, size_t nrows, uint32_t flags, struct ArrowArrayStream* out,
                 char* err, size_t errlen);

/* Record batches held for gathers of rows across them (client/batch_gather.hpp): a shuffle
 * buffer's batches, from which each shuffled batch is one copy of the values it selects.
 * onecopy_batches_new moves in `schema` and `nbatches` struct arrays of it (each is left
 * released, on failure too) and fails with ONECOPY_E_UNSUPPORTED for dictionary, union, run-end
 * and view layouts. onecopy_batches_take writes rows `rows[0..nrows)` (numbered across the
 * batches in order; any order, repeats allowed; one past the end is ONECOPY_E_INVALID) as one
 * new struct array to `out`, owning its buffers. Takes may run on several threads at once. */
typedef struct onecopy_batches onecopy_batches;
int onecopy_batches_new(struct ArrowSchema* schema, struct ArrowArray* batches, size_t nbatches,
                        onecopy_batches** out, char* err, size_t errlen);
uint64_t onecopy_batches_rows(const onecopy_batches* batches);
int onecopy_batches_take(const onecopy_batches* batches, const uint64_t* rows, size_t nrows,
                         struct ArrowArray* out, char* err, size_t errlen);
void onecopy_batches_free(onecopy_batches* batches);

/* The file's units of work for sharded reading (format/shard.hpp): row ranges cut at chunk
 * boundaries, none longer than `max_rows` (0: the shard_unit_rows knob). `*out` receives 2 * `*n`
 * values, (begin, end) pairs in row order; free it with onecopy_free_units. */
int onecopy_file_units(const onecopy_file* file, uint64_t max_rows, uint64_t** out, size_t* n,
                       char* err, size_t errlen);

/* The units that shard (rank, worker) of (world_size, num_workers) reads, in reading order
 * (format/shard.hpp shard_units): `units` holds 3 * `nunits` values, (file, begin, end) triples;
 * `*out` receives 3 * `*n` values the same way. With `shuffle` non-zero the units are dealt in
 * an order drawn from (seed, epoch). Free `*out` with onecopy_free_units. */
int onecopy_shard_units(const uint64_t* units, size_t nunits, uint32_t rank, uint32_t world_size,
                        uint32_t worker, uint32_t num_workers, int shuffle, uint64_t seed,
                        uint64_t epoch, uint64_t** out, size_t* n, char* err, size_t errlen);
void onecopy_free_units(uint64_t* units);

/* A JSON report on the file (onecopy inspect --json). Free with onecopy_free_string. */
int onecopy_inspect_json(const onecopy_file* file, char** out, char* err, size_t errlen);
void onecopy_free_string(char* s);

const char* onecopy_version(void);

/* ---- onecopyd (daemon/PROTOCOL.md). `socket` NULL or "": $ONECOPY_SOCKET, else the default.
 * A local path is opened by this process, with its permissions, and its descriptor passed to
 * the daemon; an s3:// or http(s) URL is read by the daemon with its credentials where its
 * access policy grants it (ONECOPY_E_DENIED otherwise). */

/* Where onecopy reads when its caller did not say (daemon/client.hpp serving_daemon_socket):
 * the socket of the daemon serving this machine, written to `out` with its NUL, or "" to read in
 * this process. `explicit_path` NULL or "": $ONECOPY_SOCKET when set (empty: this process),
 * else the default socket when its file exists. A socket so chosen must answer; otherwise an
 * error names it (never a silent read in this process). ONECOPY_E_INVALID when `outlen` is
 * too small. */
int onecopy_daemon_socket(const char* explicit_path, char* out, size_t outlen, char* err,
                          size_t errlen);

/* The daemon's status as a JSON object (onecopy status --json). Free with onecopy_free_string. */
int onecopy_daemon_status_json(const char* socket, char** out, char* err, size_t errlen);

/* The files `pattern` names: an S3 prefix ending in '/' (its *.vortex objects), an s3:// or local
 * glob, a local directory (its *.vortex files), or else the name itself (client/open_uri.hpp).
 * `*out` is a string of names each ended by '\n'; free it with onecopy_free_string. The daemon
 * variant lists an s3:// pattern with the daemon's credentials and expands a local one here. */
int onecopy_expand(const char* pattern, char** out, char* err, size_t errlen);
int onecopy_daemon_list(const char* socket, const char* pattern, char** out, char* err,
                        size_t errlen);

/* The index of an s3:// prefix or glob as the daemon makes it: one listing, the prefix's
 * manifest (_onecopy/manifest.vortex), each file's footer from the node's metadata cache, the
 * manifest or the file. `*out` is a JSON object {"manifest", "from_cache", "from_manifest",
 * "fallbacks", "files": [{"uri", "etag", "size", "rows", "units": [begin, end, ...],
 * "footer_offset", "footer"}]}, "footer" the footer's bytes in hex when `footers` is nonzero
 * (else empty); units of at most `unit_rows` rows (0: the shard_unit_rows knob). Free it with
 * onecopy_free_string. */
int onecopy_daemon_dataset(const char* socket, const char* pattern, uint64_t unit_rows, int footers,
                           char** out, char* err, size_t errlen);
/* The same index made in this process, with its credentials. */
int onecopy_dataset(const char* pattern, uint64_t unit_rows, int footers, char** out, char* err,
                    size_t errlen);
/* CRC-32C (Castagnoli) of `len` bytes: the manifest's footer checksum. */
uint32_t onecopy_crc32c(const uint8_t* data, size_t len);

/* The units of `uri` as the daemon computes them (onecopy_file_units of the file it reads);
 * `*out` as onecopy_file_units, freed with onecopy_free_units. */
int onecopy_daemon_units(const char* socket, const char* uri, uint64_t max_rows, uint64_t** out,
                         size_t* n, char* err, size_t errlen);
/* The position just after the last batch the stream handed out (the shard's start before the
 * first; 0, 0 throughout for an unsharded scan): pass it as start_unit, start_rows with the
 * same shard to resume. */
void onecopy_cursor_position(const onecopy_cursor* cursor, uint64_t* unit, uint64_t* rows);

/* The number of units in the scan's shard (0 for an unsharded scan). */
uint64_t onecopy_cursor_units(const onecopy_cursor* cursor);

/* 0 while the stream has not failed; else the error class it failed with, its message in
 * `err`. */
int onecopy_cursor_error(const onecopy_cursor* cursor, char* err, size_t errlen);

/* Where a scan's time went (format/scan_profile.hpp), in nanoseconds: waiting for storage,
 * decoding, copying into slabs (the daemon's), the scan waiting for its consumer, a batch
 * waiting for room in the daemon's pool, the consumer waiting for the scan, and the wall time
 * from its start to its end (to now while it runs). A daemon scan's daemon-side stages
 * (storage, decode, copy, consumer_wait, pool_wait, bytes_read) arrive when it ends; `complete`
 * is then 1. */
typedef struct onecopy_scan_stats {
  uint64_t rows, batches, bytes_read;
  uint64_t storage_ns, decode_ns, copy_ns, consumer_wait_ns, pool_wait_ns, wait_ns, wall_ns;
  int complete;
} onecopy_scan_stats;

void onecopy_cursor_stats(const onecopy_cursor* cursor, onecopy_scan_stats* out);

/* The stage that held `stats` up longest: "storage", "decode", "copy", "pool" or "consumer"
 * (the scan kept up with its consumer), or "none"; a static string. */
const char* onecopy_bottleneck(const onecopy_scan_stats* stats);

void onecopy_cursor_free(onecopy_cursor* cursor);

/* ---- Arrow PyCapsule support, for bindings that create capsules without compiling against
 * Python. The structs live on the C heap; the capsule destructors release and free them and
 * look `PyCapsule_GetPointer` up in the running process, so libonecopy never links libpython. */
struct ArrowArrayStream* onecopy_stream_new(void);
void onecopy_stream_free(struct ArrowArrayStream* stream); /* releases first if needed */
struct ArrowSchema* onecopy_schema_new(void);
void onecopy_stream_capsule_destructor(void* capsule); /* for "arrow_array_stream" capsules */
void onecopy_schema_capsule_destructor(void* capsule); /* for "arrow_schema" capsules */

#ifdef __cplusplus
}
#endif

#endif /* ONECOPY_C_API_H */
