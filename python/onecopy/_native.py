# SPDX-License-Identifier: Apache-2.0
"""ctypes binding to libonecopy's C API (client/c_api.h)."""

from __future__ import annotations

import ctypes
import json
import os
from pathlib import Path
from typing import Iterable, Optional, Sequence, Union

from onecopy.expr import Expr

_ERRLEN = 4096
_ERROR_CLASSES = {
    1: "io", 2: "timeout", 3: "protocol", 4: "corrupt", 5: "invalid", 6: "unsupported",
    7: "cuda", 8: "not_found", 9: "out_of_memory", 10: "cancelled",
}


class OnecopyError(Exception):
    """An error from the onecopy library. `code` is the error class ("corrupt", "io", ...)."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code


# The Arrow C structs live on the C heap (onecopy_stream_new / onecopy_schema_new) and are only
# passed through, so Python treats them as opaque.
class ArrowSchema(ctypes.Structure):
    pass


class ArrowArrayStream(ctypes.Structure):
    pass


def _find_library() -> str:
    env = os.environ.get("ONECOPY_LIBRARY")
    if env:
        return env
    here = Path(__file__).resolve().parent
    for candidate in (here / "libonecopy.so", here.parent.parent / "build" / "client" / "libonecopy.so"):
        if candidate.exists():
            return str(candidate)
    return "libonecopy.so"


_lib = ctypes.CDLL(_find_library())
_lib.onecopy_init.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
_lib.onecopy_open.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_char_p, ctypes.c_size_t]
_lib.onecopy_close.argtypes = [ctypes.c_void_p]
_lib.onecopy_row_count.argtypes = [ctypes.c_void_p]
_lib.onecopy_row_count.restype = ctypes.c_uint64
_lib.onecopy_schema.argtypes = [ctypes.c_void_p, ctypes.POINTER(ArrowSchema), ctypes.c_char_p, ctypes.c_size_t]
_lib.onecopy_scan.argtypes = [
    ctypes.c_void_p, ctypes.POINTER(ctypes.c_char_p), ctypes.c_size_t, ctypes.c_char_p, ctypes.c_uint64,
    ctypes.c_int64, ctypes.c_int64, ctypes.POINTER(ArrowArrayStream), ctypes.c_char_p, ctypes.c_size_t,
]
_lib.onecopy_take.argtypes = [
    ctypes.c_void_p, ctypes.POINTER(ctypes.c_char_p), ctypes.c_size_t, ctypes.POINTER(ctypes.c_uint64),
    ctypes.c_size_t, ctypes.POINTER(ArrowArrayStream), ctypes.c_char_p, ctypes.c_size_t,
]
_lib.onecopy_inspect_json.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_char_p, ctypes.c_size_t]
_lib.onecopy_free_string.argtypes = [ctypes.c_void_p]
_lib.onecopy_version.restype = ctypes.c_char_p
_lib.onecopy_daemon_status_json.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_char_p, ctypes.c_size_t]
_lib.onecopy_daemon_scan.argtypes = [
    ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p), ctypes.c_size_t, ctypes.c_char_p,
    ctypes.c_uint64, ctypes.c_int64, ctypes.c_int64, ctypes.POINTER(ArrowArrayStream), ctypes.c_char_p,
    ctypes.c_size_t,
]


def _check(rc: int, err: ctypes.Array) -> None:
    if rc != 0:
        raise OnecopyError(_ERROR_CLASSES.get(rc, "unknown"), err.value.decode("utf-8", "replace"))


def reload_settings() -> None:
    """Re-reads the ONECOPY_* environment variables (`onecopy defaults` lists them) into the
    library's knobs; call after changing os.environ, before starting scans. Raises OnecopyError
    naming the variable when a value is invalid."""
    err = ctypes.create_string_buffer(_ERRLEN)
    _check(_lib.onecopy_init(err, _ERRLEN), err)


reload_settings()

# PyCapsules carry C-heap structs; libonecopy's own destructors release and free them, so no
# Python code runs when a capsule dies (which may happen while an exception unwinds).
_lib.onecopy_stream_new.restype = ctypes.POINTER(ArrowArrayStream)
_lib.onecopy_stream_free.argtypes = [ctypes.POINTER(ArrowArrayStream)]
_lib.onecopy_schema_new.restype = ctypes.POINTER(ArrowSchema)
_PyCapsule_New = ctypes.pythonapi.PyCapsule_New
_PyCapsule_New.restype = ctypes.py_object
_PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_STREAM_DESTRUCTOR = ctypes.cast(_lib.onecopy_stream_capsule_destructor, ctypes.c_void_p)
_SCHEMA_DESTRUCTOR = ctypes.cast(_lib.onecopy_schema_capsule_destructor, ctypes.c_void_p)


class Scan:
    """One pass over a file; an Arrow stream source usable once."""

    def __init__(self, stream):
        self._stream = stream  # POINTER(ArrowArrayStream) on the C heap

    def __arrow_c_stream__(self, requested_schema: Optional[object] = None) -> object:
        if self._stream is None:
            raise OnecopyError("invalid", "this scan was already consumed; call scan() again")
        stream, self._stream = self._stream, None
        return _PyCapsule_New(ctypes.cast(stream, ctypes.c_void_p), b"arrow_array_stream", _STREAM_DESTRUCTOR)

    def __del__(self):
        if getattr(self, "_stream", None) is not None:
            _lib.onecopy_stream_free(self._stream)
            self._stream = None


def _column_array(columns: Optional[Sequence[str]]):
    names = [c.encode() for c in columns] if columns is not None else []
    return (ctypes.c_char_p * max(len(names), 1))(*names), len(names)


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
        schema = _lib.onecopy_schema_new()
        capsule = _PyCapsule_New(ctypes.cast(schema, ctypes.c_void_p), b"arrow_schema", _SCHEMA_DESTRUCTOR)
        err = ctypes.create_string_buffer(_ERRLEN)
        _check(_lib.onecopy_schema(self._handle, schema, err, _ERRLEN), err)
        return capsule

    @property
    def schema(self):
        """The file's schema as a pyarrow.Schema (pyarrow is imported on first use)."""
        import pyarrow as pa

        return pa.schema(self)

    def scan(self, columns: Optional[Sequence[str]] = None, filter: Union[str, Expr, None] = None,
             batch_rows: int = 0, row_range: Optional[tuple[int, int]] = None) -> Scan:
        """Streams record batches of `columns` (all when None), at most `batch_rows` rows each
        (0: the file's chunks), keeping the rows where `filter` is TRUE. `filter` is SQL WHERE
        text or an expression from onecopy.col / onecopy.lit; an unparsable or unbindable filter
        raises OnecopyError here, its message pointing at the offending token."""
        if filter is not None and not isinstance(filter, (str, Expr)):
            raise TypeError(f"filter must be a str or an onecopy.Expr, not {type(filter).__name__}")
        cols, ncols = _column_array(columns)
        begin, end = (row_range if row_range is not None else (0, -1))
        scan = Scan(_lib.onecopy_stream_new())  # owns the struct from here on
        err = ctypes.create_string_buffer(_ERRLEN)
        sql = str(filter).encode() if filter is not None else None
        _check(_lib.onecopy_scan(self._handle, cols, ncols, sql, int(batch_rows or 0), int(begin), int(end),
                                 scan._stream, err, _ERRLEN), err)
        return scan

    def take(self, indices: Iterable[int], columns: Optional[Sequence[str]] = None) -> Scan:
        """Rows `indices` (any order, repeats allowed; a numpy array works) of `columns` (all when
        None), as a stream of one batch. Negative indices raise ValueError; indices at or past
        the row count raise OnecopyError."""
        rows = [int(i) for i in indices]
        if any(i < 0 for i in rows):
            raise ValueError("take() indices must be non-negative")
        arr = (ctypes.c_uint64 * max(len(rows), 1))(*rows)
        cols, ncols = _column_array(columns)
        scan = Scan(_lib.onecopy_stream_new())
        err = ctypes.create_string_buffer(_ERRLEN)
        _check(_lib.onecopy_take(self._handle, cols, ncols, arr, len(rows), scan._stream, err, _ERRLEN), err)
        return scan

    def inspect(self) -> dict:
        """The dtype, layout tree, encodings, segments and zone maps, as a dict."""
        out = ctypes.c_void_p()
        err = ctypes.create_string_buffer(_ERRLEN)
        _check(_lib.onecopy_inspect_json(self._handle, ctypes.byref(out), err, _ERRLEN), err)
        try:
            return json.loads(ctypes.string_at(out.value).decode())
        finally:
            _lib.onecopy_free_string(out)


def open(path) -> VortexFile:  # noqa: A001 - mirrors builtins.open / vortex.open
    """Opens a local Vortex file."""
    return VortexFile(path)


def version() -> str:
    return _lib.onecopy_version().decode()


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
        batches_delivered, gbps_10s, requests_in_flight, errors, bytes_copied, copies_per_byte,
        pool_bytes, pool_limit_bytes, worker_threads, slabs_sent, gpu_devices,
        gpu_memory_used_bytes, gpu_memory_total_bytes (daemon/protocol.fbs StatusReply)."""
        out = ctypes.c_void_p()
        err = ctypes.create_string_buffer(_ERRLEN)
        _check(_lib.onecopy_daemon_status_json(self._sock(), ctypes.byref(out), err, _ERRLEN), err)
        try:
            return json.loads(ctypes.string_at(out.value).decode())
        finally:
            _lib.onecopy_free_string(out)

    def scan_stream(self, path: str, columns: Optional[Sequence[str]] = None,
                    filter: Union[str, Expr, None] = None, batch_rows: int = 0,
                    row_range: Optional[tuple[int, int]] = None) -> Scan:
        """The daemon's scan of `path` (a local path or s3:// URL, opened by the daemon) as an
        Arrow stream source; arguments as VortexFile.scan."""
        if filter is not None and not isinstance(filter, (str, Expr)):
            raise TypeError(f"filter must be a str or an onecopy.Expr, not {type(filter).__name__}")
        cols, ncols = _column_array(columns)
        begin, end = (row_range if row_range is not None else (0, -1))
        scan = Scan(_lib.onecopy_stream_new())
        err = ctypes.create_string_buffer(_ERRLEN)
        sql = str(filter).encode() if filter is not None else None
        _check(_lib.onecopy_daemon_scan(self._sock(), str(path).encode(), cols, ncols, sql,
                                        int(batch_rows or 0), int(begin), int(end), scan._stream,
                                        err, _ERRLEN), err)
        return scan

    def scan(self, path: str, columns: Optional[Sequence[str]] = None,
             filter: Union[str, Expr, None] = None, batch_rows: int = 0,
             row_range: Optional[tuple[int, int]] = None):
        """Yields pyarrow.RecordBatch objects of the daemon's scan (see scan_stream)."""
        import pyarrow as pa

        reader = pa.RecordBatchReader.from_stream(
            self.scan_stream(path, columns=columns, filter=filter, batch_rows=batch_rows, row_range=row_range))
        while True:
            try:
                yield reader.read_next_batch()
            except StopIteration:
                return
