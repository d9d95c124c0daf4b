# SPDX-License-Identifier: Apache-2.0
"""One scan request, built once for every scan Python starts: in this process or in onecopyd, into
host or GPU memory, over every row, a row range, a shard, explicit ranges or the rows of a take.
`ScanRequest` is the
library's request (format/scan_request.hpp) as Python holds it; `start` hands it, as the C API's
onecopy_scan_options, to the one entry point onecopy_scan (client/c_api.h), which checks it (one
selection of the five, no reversed range, a start only with units, a take without a filter) and
plans it."""

from __future__ import annotations

import ctypes
import dataclasses
import json
import os
from typing import Optional, Sequence, Union

from onecopy._device import ArrowDeviceArrayStream, DeviceScan, consumer_stream, parse_device
from onecopy._lib import _ERRLEN, ArrowArrayStream, _check, _lib
from onecopy._scan import Scan, _Cursor
from onecopy.expr import Expr

HOST = -1  # ONECOPY_DEVICE_HOST
ONECOPY_STRING_OFFSETS = 1
ONECOPY_ROW_NUMBERS = 2
ROW_NUMBER_COLUMN = "_row_number"
_TO_END = 2**64 - 1


class Shard(ctypes.Structure):
    """onecopy_shard: shard (rank, worker) of (world_size, num_workers), its units dealt in an order
    drawn from (seed, epoch) with `shuffle`, at most `unit_rows` rows each (0: the planner's
    shard_unit_rows)."""

    _fields_ = [("rank", ctypes.c_uint32), ("world_size", ctypes.c_uint32), ("worker", ctypes.c_uint32),
                ("num_workers", ctypes.c_uint32), ("shuffle", ctypes.c_int), ("seed", ctypes.c_uint64),
                ("epoch", ctypes.c_uint64), ("unit_rows", ctypes.c_uint64)]


class _Options(ctypes.Structure):
    """onecopy_scan_options (client/c_api.h), versioned by its size."""

    _fields_ = [("size", ctypes.c_size_t), ("columns", ctypes.POINTER(ctypes.c_char_p)), ("ncolumns", ctypes.c_size_t),
                ("filter", ctypes.c_char_p), ("batch_rows", ctypes.c_uint64), ("flags", ctypes.c_uint32),
                ("row_range", ctypes.POINTER(ctypes.c_uint64)), ("shard", ctypes.POINTER(Shard)),
                ("ranges", ctypes.POINTER(ctypes.c_uint64)), ("nranges", ctypes.c_size_t),
                ("start_unit", ctypes.c_uint64), ("start_rows", ctypes.c_uint64), ("device", ctypes.c_int),
                ("consumer_stream", ctypes.c_size_t), ("take_rows", ctypes.POINTER(ctypes.c_uint64)),
                ("ntake_rows", ctypes.c_size_t)]


class Source(ctypes.Structure):
    """onecopy_source: an open file read in this process, or a path or URL onecopyd reads."""

    _fields_ = [("file", ctypes.c_void_p), ("socket", ctypes.c_char_p), ("uri", ctypes.c_char_p)]

    @classmethod
    def of_file(cls, handle) -> "Source":
        return cls(file=handle)

    @classmethod
    def of_daemon(cls, socket: Optional[bytes], uri) -> "Source":
        return cls(file=None, socket=socket, uri=os.fsencode(uri) if not isinstance(uri, bytes) else uri)


_lib.onecopy_scan.argtypes = [ctypes.POINTER(Source), ctypes.POINTER(_Options), ctypes.POINTER(ArrowArrayStream),
                              ctypes.POINTER(ArrowDeviceArrayStream), ctypes.POINTER(ctypes.c_void_p),
                              ctypes.c_char_p, ctypes.c_size_t]


def filter_text(filter) -> Optional[bytes]:
    """A scan's `filter` (SQL text or an onecopy.Expr) as the library takes it; TypeError for
    anything else."""
    if filter is None:
        return None
    if not isinstance(filter, (str, Expr)):
        raise TypeError(f"filter must be a str or an onecopy.Expr, not {type(filter).__name__}")
    return str(filter).encode()


def string_flags(strings: str) -> int:
    """The flags of a `strings` argument: "views" (Arrow string views) or "offsets"."""
    if strings == "views":
        return 0
    if strings == "offsets":
        return ONECOPY_STRING_OFFSETS
    raise ValueError(f'strings is "views" or "offsets", not {strings!r}')


def column_array(columns: Optional[Sequence[str]]):
    names = [c.encode() for c in columns] if columns is not None else []
    return (ctypes.c_char_p * max(len(names), 1))(*names), len(names)


def range_array(ranges: Sequence[tuple[int, int]]):
    """(begin, end) row pairs as a C array of 2 * n values; ValueError for anything else."""
    flat = [int(v) for r in ranges for v in r]
    if len(flat) != 2 * len(ranges) or any(v < 0 for v in flat):
        raise ValueError("ranges are (begin, end) pairs of row numbers")
    return (ctypes.c_uint64 * max(len(flat), 1))(*flat), len(ranges)


def row_array(rows: Sequence[int]):
    """Row numbers as a uint64 numpy array (one slot for none, so the pointer is not NULL) and
    their count; ValueError for a negative one."""
    import numpy as np

    arr = np.asarray(rows if isinstance(rows, np.ndarray) else list(rows), dtype=np.int64).ravel()
    if arr.size and arr.min() < 0:
        raise ValueError("take rows are non-negative row numbers")
    return np.ascontiguousarray(arr if arr.size else np.zeros(1, dtype=np.int64), dtype=np.uint64), int(arr.size)


@dataclasses.dataclass
class ScanRequest:
    """A scan: `columns` (None: all), `filter` (SQL WHERE text or an onecopy.Expr), at most
    `batch_rows` rows a batch (0: the file's splits), and which rows: every row, `row_range`
    (begin, end), `shard` (a Shard), `ranges` ((begin, end) pairs read in order) or `take_rows`
    (row numbers, in order, repeats kept: a take, with no filter, on the host), one of them; a
    shard or ranges start at `start`, a (unit, rows) position a cursor reported. `strings` as
    VortexFile.scan's; `device` "cpu", "cuda[:N]" or "host-reference"; `row_numbers` appends the
    column ROW_NUMBER_COLUMN (uint64), each delivered row's number in the file (a host scan,
    not a take)."""

    columns: Optional[Sequence[str]] = None
    filter: Union[str, Expr, None] = None
    batch_rows: int = 0
    row_range: Optional[tuple[int, int]] = None
    shard: Optional[Shard] = None
    ranges: Optional[Sequence[tuple[int, int]]] = None
    take_rows: Optional[Sequence[int]] = None
    start: tuple[int, int] = (0, 0)
    strings: str = "views"
    device: str = "cpu"
    row_numbers: bool = False

    def reads_units(self) -> bool:
        return self.shard is not None or self.ranges is not None

    def device_index(self) -> int:
        """HOST, a CUDA device number or the host reference's (onecopy._device.parse_device)."""
        return HOST if self.device == "cpu" else parse_device(self.device)

    def _options(self, consumer: int):
        """The C struct, and what it points into (kept alive as long as the struct is used)."""
        keep = []
        cols, ncols = column_array(self.columns)
        keep.append(cols)
        opts = _Options(size=ctypes.sizeof(_Options), columns=cols, ncolumns=ncols, filter=filter_text(self.filter),
                        batch_rows=int(self.batch_rows or 0),
                        flags=string_flags(self.strings) | (ONECOPY_ROW_NUMBERS if self.row_numbers else 0),
                        start_unit=int(self.start[0]), start_rows=int(self.start[1]), device=self.device_index(),
                        consumer_stream=consumer)
        if self.row_range is not None:
            begin, end = self.row_range
            rows = (ctypes.c_uint64 * 2)(int(begin), _TO_END if end is None or end < 0 else int(end))
            keep.append(rows)
            opts.row_range = rows
        if self.shard is not None:
            keep.append(self.shard)
            opts.shard = ctypes.pointer(self.shard)
        if self.ranges is not None:
            arr, n = range_array(self.ranges)
            keep.append(arr)
            opts.ranges, opts.nranges = arr, n
        if self.take_rows is not None:
            arr, n = row_array(self.take_rows)
            keep.append(arr)
            opts.take_rows, opts.ntake_rows = ctypes.cast(arr.ctypes.data, ctypes.POINTER(ctypes.c_uint64)), n
        return opts, keep


_lib.onecopy_scan_request_json.argtypes = [ctypes.POINTER(_Options), ctypes.POINTER(ctypes.c_void_p), ctypes.c_char_p,
                                           ctypes.c_size_t]


def describe(request: ScanRequest) -> dict:
    """The request as the library reads it (onecopy_scan_request_json: checked as a scan would
    check it), as a dict: what every layer below hands the planner."""
    opts, keep = request._options(0)
    out = ctypes.c_void_p()
    err = ctypes.create_string_buffer(_ERRLEN)
    _check(_lib.onecopy_scan_request_json(ctypes.byref(opts), ctypes.byref(out), err, _ERRLEN), err)
    try:
        return json.loads(ctypes.string_at(out.value).decode())
    finally:
        _lib.onecopy_free_string(out)


def start(source: Source, request: ScanRequest):
    """Starts `request` on `source`: a Scan (host memory; its cursor as `Scan._cursor`) or, for a
    device, a DeviceScan (onecopy._device)."""
    index = request.device_index()
    if index != HOST:
        opts, keep = request._options(consumer_stream(index))
        return DeviceScan(index, lambda out, cursor, err: _lib.onecopy_scan(
            ctypes.byref(source), ctypes.byref(opts), None, out, cursor, err, _ERRLEN))
    opts, keep = request._options(0)
    scan = Scan(_lib.onecopy_stream_new())  # owns the struct from here on
    cursor = ctypes.c_void_p()
    err = ctypes.create_string_buffer(_ERRLEN)
    _check(_lib.onecopy_scan(ctypes.byref(source), ctypes.byref(opts), scan._stream, None, ctypes.byref(cursor), err,
                             _ERRLEN), err)
    scan._cursor = _Cursor(cursor)
    return scan
