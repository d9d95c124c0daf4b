# SPDX-License-Identifier: Apache-2.0
"""The files and the daemon as Python sees them (client/c_api.h through ctypes): VortexFile, read
in this process; Client, a connection to onecopyd, and its resumable ScanCursor; Batches, the
gather across record batches; expand and shard_units. Every scan either starts is one
ScanRequest (onecopy._request)."""

from __future__ import annotations

import ctypes
import json
import os
import time
from typing import Iterable, Optional, Sequence, Union

from onecopy._lib import (_ERRLEN, _PyCapsule_New, _SCHEMA_DESTRUCTOR, ArrowArray, ArrowArrayStream, ArrowSchema,
                          OnecopyError, _check, _lib)
from onecopy._request import ScanRequest, Shard, Source, column_array, start, string_flags
from onecopy._scan import Scan, merge_stats
from onecopy.expr import Expr

_lib.onecopy_open.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_char_p, ctypes.c_size_t]
_lib.onecopy_close.argtypes = [ctypes.c_void_p]
_lib.onecopy_row_count.argtypes = [ctypes.c_void_p]
_lib.onecopy_row_count.restype = ctypes.c_uint64
_lib.onecopy_schema.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.POINTER(ArrowSchema), ctypes.c_char_p,
                                ctypes.c_size_t]
_lib.onecopy_take.argtypes = [
    ctypes.c_void_p, ctypes.POINTER(ctypes.c_char_p), ctypes.c_size_t, ctypes.POINTER(ctypes.c_uint64),
    ctypes.c_size_t, ctypes.c_uint32, ctypes.POINTER(ArrowArrayStream), ctypes.c_char_p, ctypes.c_size_t,
]
_lib.onecopy_file_units.argtypes = [
    ctypes.c_void_p, ctypes.c_uint64, ctypes.POINTER(ctypes.POINTER(ctypes.c_uint64)),
    ctypes.POINTER(ctypes.c_size_t), ctypes.c_char_p, ctypes.c_size_t,
]
_lib.onecopy_shard_units.argtypes = [
    ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t, ctypes.c_uint32, ctypes.c_uint32, ctypes.c_uint32,
    ctypes.c_uint32, ctypes.c_int, ctypes.c_uint64, ctypes.c_uint64,
    ctypes.POINTER(ctypes.POINTER(ctypes.c_uint64)), ctypes.POINTER(ctypes.c_size_t), ctypes.c_char_p,
    ctypes.c_size_t,
]
_lib.onecopy_daemon_units.argtypes = [
    ctypes.c_char_p, ctypes.c_char_p, ctypes.c_uint64, ctypes.POINTER(ctypes.POINTER(ctypes.c_uint64)),
    ctypes.POINTER(ctypes.c_size_t), ctypes.c_char_p, ctypes.c_size_t,
]
_lib.onecopy_expand.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_char_p, ctypes.c_size_t]
_lib.onecopy_daemon_list.argtypes = [
    ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_char_p, ctypes.c_size_t,
]
_lib.onecopy_daemon_dataset.argtypes = [
    ctypes.c_char_p, ctypes.c_char_p, ctypes.c_uint64, ctypes.c_int, ctypes.POINTER(ctypes.c_void_p), ctypes.c_char_p,
    ctypes.c_size_t,
]
_lib.onecopy_dataset.argtypes = [
    ctypes.c_char_p, ctypes.c_uint64, ctypes.c_int, ctypes.POINTER(ctypes.c_void_p), ctypes.c_char_p, ctypes.c_size_t,
]
_lib.onecopy_crc32c.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
_lib.onecopy_crc32c.restype = ctypes.c_uint32
_lib.onecopy_inspect_json.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_char_p, ctypes.c_size_t]
_lib.onecopy_daemon_status_json.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_char_p,
                                            ctypes.c_size_t]


class VortexFile:
    """An open Vortex file."""

    def __init__(self, path: str):
        self.path = str(path)
        handle = ctypes.c_void_p()
        err = ctypes.create_string_buffer(_ERRLEN)
        _check(_lib.onecopy_open(os.fsencode(self.path), ctypes.byref(handle), err, _ERRLEN), err)
        self._handle = handle

    def __del__(self):
        if getattr(self, "_handle", None):
            _lib.onecopy_close(self._handle)
            self._handle = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.__del__()

    @property
    def row_count(self) -> int:
        return int(_lib.onecopy_row_count(self._handle))

    def __len__(self) -> int:
        return self.row_count

    def __arrow_c_schema__(self) -> object:
        return self._schema_capsule("views")

    def _schema_capsule(self, strings: str) -> object:
        schema = _lib.onecopy_schema_new()
        capsule = _PyCapsule_New(ctypes.cast(schema, ctypes.c_void_p), b"arrow_schema", _SCHEMA_DESTRUCTOR)
        err = ctypes.create_string_buffer(_ERRLEN)
        _check(_lib.onecopy_schema(self._handle, string_flags(strings), schema, err, _ERRLEN), err)
        return capsule

    @property
    def schema(self):
        """The file's schema as a pyarrow.Schema, as scans deliver it by default (strings as
        views; pyarrow is imported on first use)."""
        import pyarrow as pa

        return pa.schema(self)

    def schema_with(self, strings: str = "views"):
        """The file's schema with strings and binaries as `strings` says (see scan)."""
        import pyarrow as pa

        return pa.Schema._import_from_c_capsule(self._schema_capsule(strings))

    def scan(self, columns: Optional[Sequence[str]] = None, filter: Union[str, Expr, None] = None,
             batch_rows: int = 0, row_range: Optional[tuple[int, int]] = None, strings: str = "views",
             device: str = "cpu", row_numbers: bool = False):
        """Streams record batches of `columns` (all when None), at most `batch_rows` rows each
        (0: the file's chunks), keeping the rows where `filter` is TRUE. `filter` is SQL WHERE
        text or an expression from onecopy.col / onecopy.lit; an unparsable or unbindable filter
        raises OnecopyError here, its message pointing at the offending token. Strings and
        binaries are Arrow string views ("views", as vortex-data gives them: no value is copied
        where the file holds views or a dictionary) or, with strings="offsets", pa.string() /
        pa.binary() with i32 offsets, for consumers that need them.

        With device="cuda:N" the batches land in that GPU's memory instead (onecopy._device):
        the scan returns a DeviceScan of DeviceBatch objects, decoded on the GPU wherever the
        fused kernels cover an array and on the CPU otherwise, strings as offsets. It raises
        OnecopyError("cuda") saying why when there is no such device. device="host-reference"
        runs the same steps on the host (onecopy._device), its batches in host memory.

        With `row_numbers`, each batch ends with the column "_row_number" (uint64): its rows'
        numbers in the file, the rows `filter` kept (on the host only)."""
        return start(Source.of_file(self._handle), ScanRequest(columns, filter, batch_rows, row_range=row_range,
                                                               strings=strings, device=device,
                                                               row_numbers=row_numbers))

    def scan_ranges(self, ranges: Sequence[tuple[int, int]], columns: Optional[Sequence[str]] = None,
                    filter: Union[str, Expr, None] = None, batch_rows: int = 0, strings: str = "views",
                    device: str = "cpu", row_numbers: bool = False):
        """scan() over the row ranges `ranges` ((begin, end) pairs, e.g. units), in that order;
        no batch spans two ranges. `device` and `row_numbers` as scan()'s."""
        return start(Source.of_file(self._handle), ScanRequest(columns, filter, batch_rows, ranges=ranges,
                                                               strings=strings, device=device,
                                                               row_numbers=row_numbers))

    def take(self, indices: Iterable[int], columns: Optional[Sequence[str]] = None, strings: str = "views") -> Scan:
        """Rows `indices` (any order, repeats allowed; a numpy array works) of `columns` (all when
        None), as a stream of one batch, strings as scan() gives them. Negative indices raise
        ValueError; indices at or past the row count raise OnecopyError."""
        rows = [int(i) for i in indices]
        if any(i < 0 for i in rows):
            raise ValueError("take() indices must be non-negative")
        arr = (ctypes.c_uint64 * max(len(rows), 1))(*rows)
        cols, ncols = column_array(columns)
        scan = Scan(_lib.onecopy_stream_new())
        err = ctypes.create_string_buffer(_ERRLEN)
        _check(_lib.onecopy_take(self._handle, cols, ncols, arr, len(rows), string_flags(strings), scan._stream, err,
                                 _ERRLEN), err)
        return scan

    def units(self, max_rows: int = 0) -> list[tuple[int, int]]:
        """The file's units of work for sharded reading: (begin, end) row ranges in row order,
        cut at chunk boundaries, none longer than `max_rows` (0: the shard_unit_rows knob)."""
        out = ctypes.POINTER(ctypes.c_uint64)()
        n = ctypes.c_size_t()
        err = ctypes.create_string_buffer(_ERRLEN)
        _check(_lib.onecopy_file_units(self._handle, int(max_rows), ctypes.byref(out), ctypes.byref(n), err,
                                       _ERRLEN), err)
        try:
            return [(out[2 * i], out[2 * i + 1]) for i in range(n.value)]
        finally:
            _lib.onecopy_free_units(out)

    def inspect(self) -> dict:
        """The dtype, layout tree, encodings, segments and zone maps, as a dict."""
        out = ctypes.c_void_p()
        err = ctypes.create_string_buffer(_ERRLEN)
        _check(_lib.onecopy_inspect_json(self._handle, ctypes.byref(out), err, _ERRLEN), err)
        try:
            return json.loads(ctypes.string_at(out.value).decode())
        finally:
            _lib.onecopy_free_string(out)


def _lines(out: ctypes.c_void_p) -> list[str]:
    try:
        return ctypes.string_at(out.value).decode().splitlines()
    finally:
        _lib.onecopy_free_string(out)


def expand(pattern: Union[str, os.PathLike]) -> list[str]:
    """The files `pattern` names, sorted: an S3 prefix ending in '/' (its *.vortex objects), an
    s3:// or local glob, a local directory (its *.vortex files), or else the name itself.
    OnecopyError "not_found" when a prefix, glob or directory names none."""
    out = ctypes.c_void_p()
    err = ctypes.create_string_buffer(_ERRLEN)
    _check(_lib.onecopy_expand(os.fsencode(pattern), ctypes.byref(out), err, _ERRLEN), err)
    return _lines(out)


def _dataset_of(out: ctypes.c_void_p) -> dict:
    try:
        index = json.loads(ctypes.string_at(out.value).decode())
    finally:
        _lib.onecopy_free_string(out)
    for f in index["files"]:
        u = f["units"]
        f["units"] = [(u[i], u[i + 1]) for i in range(0, len(u), 2)]
        f["footer"] = bytes.fromhex(f["footer"])
    return index


def dataset_index(pattern: str, unit_rows: int = 0, footers: bool = False) -> dict:
    """Client.dataset_index made in this process, with its own credentials."""
    out = ctypes.c_void_p()
    err = ctypes.create_string_buffer(_ERRLEN)
    _check(_lib.onecopy_dataset(pattern.encode(), int(unit_rows), int(bool(footers)), ctypes.byref(out), err,
                                _ERRLEN), err)
    return _dataset_of(out)


def crc32c(data: bytes) -> int:
    """CRC-32C (Castagnoli) of @data, as onecopy checks a manifest's footers."""
    return _lib.onecopy_crc32c(data, len(data))


def shard_units(units: Sequence[tuple[int, int, int]], rank: int = 0, world_size: int = 1, worker: int = 0,
                num_workers: int = 1, shuffle: bool = False, seed: int = 0, epoch: int = 0) -> list[tuple[int, int, int]]:
    """The (file, begin, end) units that shard (rank, worker) of (world_size, num_workers) reads,
    in reading order: with `shuffle`, dealt in an order drawn from (seed, epoch). Over all ranks
    and workers the shards partition `units` (format/shard.hpp)."""
    flat = [int(v) for u in units for v in u]
    arr = (ctypes.c_uint64 * max(len(flat), 1))(*flat)
    out = ctypes.POINTER(ctypes.c_uint64)()
    n = ctypes.c_size_t()
    err = ctypes.create_string_buffer(_ERRLEN)
    _check(_lib.onecopy_shard_units(arr, len(units), int(rank), int(world_size), int(worker), int(num_workers),
                                    1 if shuffle else 0, int(seed) & (2**64 - 1), int(epoch), ctypes.byref(out),
                                    ctypes.byref(n), err, _ERRLEN), err)
    try:
        return [(out[3 * i], out[3 * i + 1], out[3 * i + 2]) for i in range(n.value)]
    finally:
        _lib.onecopy_free_units(out)


class Client:
    """A connection to onecopyd (daemon/PROTOCOL.md), reached through libonecopy's C API.

    `socket` defaults to $ONECOPY_SOCKET, else /run/onecopy/onecopyd.sock. Scanned batches are
    zero-copy views of the connection's read-only memfd slabs, each mapped once; each batch's
    lease (its range of a slab) is released when the last pyarrow object using it is dropped."""

    def __init__(self, socket: Optional[str] = None):
        self.socket = socket

    def _sock(self) -> Optional[bytes]:
        return os.fsencode(self.socket) if self.socket else None

    def status(self) -> dict:
        """version, uptime_ms, clients, active_scans, batches_in_flight, bytes_delivered,
        batches_delivered, gbps_10s, requests_in_flight, errors, bytes_copied,
        bytes_copied_after_decode, bytes_in_place, copies_per_byte,
        pool_bytes, pool_limit_bytes, worker_threads, slabs_sent, gpu_devices,
        gpu_memory_used_bytes, gpu_memory_total_bytes (daemon/protocol.fbs StatusReply)."""
        out = ctypes.c_void_p()
        err = ctypes.create_string_buffer(_ERRLEN)
        _check(_lib.onecopy_daemon_status_json(self._sock(), ctypes.byref(out), err, _ERRLEN), err)
        try:
            return json.loads(ctypes.string_at(out.value).decode())
        finally:
            _lib.onecopy_free_string(out)

    def list(self, pattern: str) -> list[str]:
        """onecopy.expand(pattern): an s3:// or rados:// pattern listed by the daemon with its
        credentials, under the prefixes its operator grants this user (daemon_s3_grants,
        daemon_rados_grants); a local pattern expanded here, with this process's permissions."""
        out = ctypes.c_void_p()
        err = ctypes.create_string_buffer(_ERRLEN)
        _check(_lib.onecopy_daemon_list(self._sock(), os.fsencode(pattern), ctypes.byref(out), err, _ERRLEN), err)
        return _lines(out)

    def dataset_index(self, pattern: str, unit_rows: int = 0, footers: bool = False) -> dict:
        """The index of an s3:// prefix or glob, made by the daemon with one listing (and the
        prefix's manifest, _onecopy/manifest.vortex, when `onecopy index` wrote one): a dict with
        "files", each {"uri", "etag", "size", "rows", "units": [(begin, end), ...]} (units of at
        most `unit_rows` rows; 0: the shard_unit_rows knob) and, with `footers`, "footer_offset"
        and "footer" (bytes); and "manifest" (the manifest used, or ""), "from_cache",
        "from_manifest", "fallbacks" (where the footers came from)."""
        out = ctypes.c_void_p()
        err = ctypes.create_string_buffer(_ERRLEN)
        _check(_lib.onecopy_daemon_dataset(self._sock(), pattern.encode(), int(unit_rows), int(bool(footers)),
                                           ctypes.byref(out), err, _ERRLEN), err)
        return _dataset_of(out)

    def dataset(self, uri_or_uris):
        """onecopy.dataset(uri_or_uris) read by this daemon: the patterns listed by it (an s3://
        prefix or glob indexed in one request, dataset_index), each file read by it (RemoteFile).
        A Client without a socket reads through the daemon serving this machine."""
        from onecopy._daemon import dataset  # the layer above, asked for when called (tests/python/test_layers.py)
        return dataset(uri_or_uris, daemon=self.socket or True)

    def units(self, path: str, max_rows: int = 0) -> list[tuple[int, int]]:
        """VortexFile.units of `path`, computed by the daemon (a local file is opened here and
        passed to it; an s3://, rados:// or http(s) URL the daemon reads as its access policy
        allows)."""
        out = ctypes.POINTER(ctypes.c_uint64)()
        n = ctypes.c_size_t()
        err = ctypes.create_string_buffer(_ERRLEN)
        _check(_lib.onecopy_daemon_units(self._sock(), str(path).encode(), int(max_rows), ctypes.byref(out),
                                         ctypes.byref(n), err, _ERRLEN), err)
        try:
            return [(out[2 * i], out[2 * i + 1]) for i in range(n.value)]
        finally:
            _lib.onecopy_free_units(out)

    def _start(self, path: str, request: ScanRequest):
        """Starts `request` in the daemon: (Scan, its cursor), or a DeviceScan for a device."""
        scan = start(Source.of_daemon(self._sock(), str(path)), request)
        return scan, getattr(scan, "_cursor", None)

    def scan_stream(self, path: str, columns: Optional[Sequence[str]] = None,
                    filter: Union[str, Expr, None] = None, batch_rows: int = 0,
                    row_range: Optional[tuple[int, int]] = None, strings: str = "views",
                    row_numbers: bool = False) -> Scan:
        """The daemon's scan of `path` as an Arrow stream source; arguments as VortexFile.scan.
        A local path is opened here, with this process's permissions, and its descriptor passed
        to the daemon; an s3:// or http(s) URL is read by the daemon with its credentials, where
        its operator grants it (onecopy.OnecopyError "denied" otherwise)."""
        request = ScanRequest(columns, filter, batch_rows, row_range=row_range, strings=strings,
                              row_numbers=row_numbers)
        return self._start(path, request)[0]

    def scan_ranges(self, path: str, ranges: Sequence[tuple[int, int]], columns: Optional[Sequence[str]] = None,
                    filter: Union[str, Expr, None] = None, batch_rows: int = 0, strings: str = "views",
                    device: str = "cpu", row_numbers: bool = False):
        """VortexFile.scan_ranges in the daemon: one request for all the ranges, so the daemon
        decodes ahead across them. With device="cuda:N", a DeviceScan as scan()'s. No ranges
        read no rows (the schema and nothing else). `row_numbers` as VortexFile.scan's."""
        if device == "host-reference":
            raise ValueError('device="host-reference" runs in this process only; onecopyd decodes on its GPUs')
        request = ScanRequest(columns, filter, batch_rows, ranges=ranges, strings=strings, device=device,
                              row_numbers=row_numbers)
        return self._start(path, request)[0]

    def take(self, path: str, rows: Sequence[int], columns: Optional[Sequence[str]] = None,
             strings: str = "views") -> Scan:
        """VortexFile.take in the daemon: `rows` (any order, repeats kept) as one batch, read as
        the in-process take reads them (only the bytes those rows need). An index past the end
        fails the stream's first batch."""
        return self._start(path, ScanRequest(columns, take_rows=rows, strings=strings))[0]

    def scan(self, path: str, columns: Optional[Sequence[str]] = None,
             filter: Union[str, Expr, None] = None, batch_rows: int = 0,
             row_range: Optional[tuple[int, int]] = None, rank: Optional[int] = None,
             world_size: Optional[int] = None, worker: int = 0, num_workers: int = 1,
             shuffle: bool = False, seed: int = 0, epoch: int = 0,
             start: Optional[tuple[int, int]] = None, unit_rows: int = 0, resume: bool = False,
             reconnect_timeout: float = 10.0, device: str = "cpu", strings: str = "views",
             row_numbers: bool = False) -> "ScanCursor":
        """The daemon's scan of `path` (see scan_stream) as a ScanCursor yielding
        pyarrow.RecordBatch objects.

        Giving rank or world_size, more than one worker, shuffle, start or unit_rows makes it a
        sharded scan (daemon/PROTOCOL.md "Sharding and resuming"): shard (rank, worker) of
        (world_size, num_workers) reads its units of at most `unit_rows` rows (0: the daemon's
        shard_unit_rows), in an order drawn from (seed, epoch) with `shuffle`, from `start`, a
        (unit, rows) position an earlier cursor reported. A sharded scan takes no row_range.

        With `resume`, a lost daemon connection (an `io` error, at the start or mid-scan) does not
        end the scan: the cursor reconnects with backoff for up to `reconnect_timeout` seconds and
        goes on from its position, delivering each row once. An unsharded scan with `resume` runs as the sharded
        scan of world 1 without shuffle: the same rows in the same order, with positions.

        Strings come as VortexFile.scan's `strings` says, and `row_numbers` as its own: a shard's
        rows keep their numbers in the file. Batches are host memory
        (`device="cpu"`): pyarrow arrays over the daemon's read-only
        slabs, which torch.from_dlpack wraps without a copy. With `device="cuda:N"` onecopyd
        decodes on that GPU and the batches arrive in its memory, mapped from the daemon's device
        slabs (daemon/PROTOCOL.md "Device batches"): a DeviceScan of DeviceBatch objects
        (onecopy._device), strings as offsets; a batch goes back to the daemon once torch's
        current stream has run what was queued on it by then. A device scan takes the shard and
        start arguments too, and reports its `position` as a ScanCursor does, but does not
        reconnect: `resume` raises ValueError (start a new scan at its position instead).
        OnecopyError("cuda") when the daemon has no such device."""
        sharded = (rank is not None or world_size is not None or worker != 0 or num_workers != 1
                   or shuffle or start is not None or unit_rows != 0)
        if device == "host-reference":
            raise ValueError('device="host-reference" runs in this process only; onecopyd decodes on its GPUs')
        # resume makes an unsharded scan a shard of world 1 (below), which the caller did not ask
        # for: said in this call's own terms rather than as the request's "one selection" rule.
        if (sharded or resume) and row_range is not None:
            raise ValueError("a sharded or resumable scan reads whole units; it takes no row_range")
        if device != "cpu" and resume:
            raise ValueError("a device scan does not reconnect: start a new one at its position (start=)")
        request = ScanRequest(columns, filter, batch_rows, row_range=row_range, strings=strings, device=device,
                              row_numbers=row_numbers)
        if sharded or resume:
            request.shard = Shard(rank=int(rank or 0), world_size=int(1 if world_size is None else world_size),
                                  worker=int(worker), num_workers=int(num_workers), shuffle=1 if shuffle else 0,
                                  seed=int(seed) & (2**64 - 1), epoch=int(epoch), unit_rows=int(unit_rows))
            request.start = tuple(start) if start is not None else (0, 0)
        if device != "cpu":
            return self._start(path, request)[0]
        return ScanCursor(self, path, request, resume, reconnect_timeout)


_lib.onecopy_batches_new.argtypes = [ctypes.POINTER(ArrowSchema), ctypes.POINTER(ArrowArray), ctypes.c_size_t,
                                     ctypes.POINTER(ctypes.c_void_p), ctypes.c_char_p, ctypes.c_size_t]
_lib.onecopy_batches_rows.restype = ctypes.c_uint64
_lib.onecopy_batches_rows.argtypes = [ctypes.c_void_p]
_lib.onecopy_batches_take.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ArrowArray),
                                      ctypes.c_char_p, ctypes.c_size_t]
_lib.onecopy_batches_free.argtypes = [ctypes.c_void_p]


class Batches:
    """Record batches of one schema held by the library for gathers across them, as a shuffle
    buffer's: take(rows) copies each selected value once, into one new batch, where
    concatenating the batches and taking from the result copies every value twice
    (client/batch_gather.hpp). Layouts: every Arrow type, string and binary views included, but
    dictionaries, unions and run-end layouts (OnecopyError "unsupported")."""

    def __init__(self, batches: Sequence, schema):
        self.schema = schema  # a pyarrow.Schema
        self._handle = None
        arrays = (ArrowArray * max(len(batches), 1))()
        c_schema = ArrowSchema()
        schema._export_to_c(ctypes.addressof(c_schema))
        for i, batch in enumerate(batches):  # zero-copy exports, moved into the library below
            batch._export_to_c(ctypes.addressof(arrays[i]))
        handle, err = ctypes.c_void_p(), ctypes.create_string_buffer(_ERRLEN)
        _check(_lib.onecopy_batches_new(ctypes.byref(c_schema), arrays, len(batches), ctypes.byref(handle), err,
                                        _ERRLEN), err)
        self._handle = handle

    @property
    def num_rows(self) -> int:
        return int(_lib.onecopy_batches_rows(self._handle))

    def take(self, rows):
        """Rows @rows (numbered across the batches in order; any order, repeats allowed) as one
        pyarrow.RecordBatch; a row past num_rows raises OnecopyError "invalid"."""
        import numpy as np
        import pyarrow as pa

        idx = np.asarray(rows)
        if idx.size and idx.dtype.kind == "i" and idx.min() < 0:
            raise OnecopyError("invalid", f"row {idx.min()} is negative")
        idx = np.ascontiguousarray(idx, dtype=np.uint64)
        out, err = ArrowArray(), ctypes.create_string_buffer(_ERRLEN)
        _check(_lib.onecopy_batches_take(self._handle, idx.ctypes.data, len(idx), ctypes.byref(out), err, _ERRLEN),
               err)
        return pa.RecordBatch._import_from_c(ctypes.addressof(out), self.schema)

    def __del__(self):
        if getattr(self, "_handle", None):
            _lib.onecopy_batches_free(self._handle)
            self._handle = None


# Reconnecting after a lost daemon: the first retry after this many seconds, doubling up to the
# second value.
_RECONNECT_BACKOFF = (0.05, 1.0)


class ScanCursor:
    """An iterator of pyarrow.RecordBatch over a daemon scan (Client.scan), which knows where it
    stands. `position` is the (unit, rows) position just after the last batch yielded (the start
    before the first; None for an unsharded scan without resume): a scan of the same shard with
    `start=position` delivers exactly the rows this one has not. `units` is the number of units in
    the shard (0 unsharded), `reconnects` how often a lost daemon was reconnected to. close() (or
    dropping the cursor) cancels the daemon's scan; batches already yielded stay valid."""

    def __init__(self, client: Client, path: str, request: ScanRequest, resume: bool, reconnect_timeout: float):
        self._client, self._path, self._request = client, path, request
        self._resume, self._timeout = resume, float(reconnect_timeout)
        self._reader = self._cursor = None
        self._schema = None
        self.position = request.start if request.reads_units() else None
        self.units = 0
        self.reconnects = 0
        self._earlier: list[dict] = []  # stats of the connections lost before this one
        try:
            self._connect()
        except OnecopyError as e:
            if not (resume and e.code == "io"):
                raise
            self._reconnect(e)

    def _connect(self) -> None:
        import pyarrow as pa

        if self._request.reads_units():
            self._request.start = self.position
        if self._cursor is not None:
            self._earlier.append(self._cursor.stats())
        scan, self._cursor = self._client._start(self._path, self._request)
        self.units = self._cursor.units()
        self._reader = pa.RecordBatchReader.from_stream(scan)
        self._schema = self._reader.schema

    def _reconnect(self, lost: OnecopyError) -> None:
        deadline = time.monotonic() + self._timeout
        delay = _RECONNECT_BACKOFF[0]
        while True:
            time.sleep(min(delay, max(0.0, deadline - time.monotonic())))
            try:
                self._connect()
                self.reconnects += 1
                return
            except OnecopyError as e:
                if e.code != "io" or time.monotonic() >= deadline:
                    raise OnecopyError(e.code, f"{e} (resuming after: {lost}; gave up after "
                                               f"{self._timeout:g} s)") from None
            delay = min(2 * delay, _RECONNECT_BACKOFF[1])

    def stats(self) -> dict:
        """Where this scan's time went (Scan.stats), over every connection it took."""
        return merge_stats(self._earlier + ([self._cursor.stats()] if self._cursor is not None else []))

    @property
    def schema(self):
        """The scan's schema as a pyarrow.Schema, known before the first batch."""
        if self._schema is None:
            raise OnecopyError("invalid", "this scan was closed before its schema came")
        return self._schema

    def __arrow_c_schema__(self) -> object:
        return self.schema.__arrow_c_schema__()

    def __arrow_c_stream__(self, requested_schema: Optional[object] = None) -> object:
        """The batches not yet yielded, as an Arrow C stream (read once, with the cursor's
        reconnects), for pa.table(cursor), duckdb.sql("select ... from cursor") and polars."""
        import pyarrow as pa

        return pa.RecordBatchReader.from_batches(self.schema, self).__arrow_c_stream__(requested_schema)

    def read_all(self):
        """The batches not yet yielded, as one pyarrow.Table. Batches a consumer keeps are
        copies (the client copies batches out of the daemon's slabs past half its limits)."""
        import pyarrow as pa

        return pa.Table.from_batches(list(self), schema=self.schema)

    def __iter__(self):
        return self

    def __next__(self):
        import pyarrow as pa

        while True:
            if self._reader is None:
                raise StopIteration
            try:
                batch = self._reader.read_next_batch()
            except StopIteration:
                self.close()
                raise
            except (OSError, pa.ArrowException) as e:
                failure = self._cursor.error() or OnecopyError("io", str(e))
                self.close()
                if not (self._resume and failure.code == "io"):
                    raise failure from None
                self._reconnect(failure)
                continue
            if self._request.reads_units():
                self.position = self._cursor.position()
            return batch

    def close(self) -> None:
        """Cancels the daemon's scan (batches already yielded stay valid)."""
        if self._reader is not None:
            self._reader.close()
        self._reader = None
