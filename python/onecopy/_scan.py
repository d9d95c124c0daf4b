# SPDX-License-Identifier: Apache-2.0
"""What a scan hands Python: `Scan`, an Arrow stream source read once by any Arrow consumer, and
the cursor beside it that says where the scan stands and where its time went."""

from __future__ import annotations

import ctypes
from typing import Optional, Sequence

from onecopy._lib import (_ERRLEN, _ERROR_CLASSES, _PyCapsule_New, _SCHEMA_DESTRUCTOR, _STREAM_DESTRUCTOR,
                          OnecopyError, _lib)

_lib.onecopy_cursor_position.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint64),
                                         ctypes.POINTER(ctypes.c_uint64)]
_lib.onecopy_cursor_units.argtypes = [ctypes.c_void_p]
_lib.onecopy_cursor_units.restype = ctypes.c_uint64
_lib.onecopy_cursor_error.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
_lib.onecopy_cursor_free.argtypes = [ctypes.c_void_p]


class _ScanStats(ctypes.Structure):
    """onecopy_scan_stats (client/c_api.h): a scan's stages, in nanoseconds."""

    _fields_ = [(name, ctypes.c_uint64) for name in
                ("rows", "batches", "bytes_read", "storage_ns", "decode_ns", "copy_ns", "consumer_wait_ns",
                 "pool_wait_ns", "wait_ns", "wall_ns")] + [("complete", ctypes.c_int)]


_lib.onecopy_cursor_stats.argtypes = [ctypes.c_void_p, ctypes.POINTER(_ScanStats)]
_lib.onecopy_bottleneck.argtypes = [ctypes.POINTER(_ScanStats)]
_lib.onecopy_bottleneck.restype = ctypes.c_char_p

# The stages of a scan's stats(), as seconds (format/scan_profile.hpp says what each means).
STAGES = ("storage", "decode", "copy", "consumer_wait", "pool_wait", "wait", "wall")


def stats_dict(stats: _ScanStats) -> dict:
    """A scan's stats as Python sees them: rows, batches, bytes_read, "<stage>_s" for each of
    STAGES, complete, and the bottleneck (the stage that held it up longest)."""
    out = {"rows": stats.rows, "batches": stats.batches, "bytes_read": stats.bytes_read}
    for stage in STAGES:
        out[f"{stage}_s"] = getattr(stats, f"{stage}_ns") / 1e9
    out["complete"] = bool(stats.complete)
    out["bottleneck"] = _lib.onecopy_bottleneck(ctypes.byref(stats)).decode()
    return out


def merge_stats(parts: Sequence[dict]) -> dict:
    """The stats of several scans (stats_dict) as one: every count and stage summed, complete
    when all are, and the bottleneck of the sums."""
    out = {"rows": 0, "batches": 0, "bytes_read": 0, **{f"{s}_s": 0.0 for s in STAGES}}
    for part in parts:
        for key in out:
            out[key] += part[key]
    out["complete"] = all(p["complete"] for p in parts)
    out["bottleneck"] = bottleneck(out)
    return out


def bottleneck(stats: dict) -> str:
    """The stage of @stats (a stats_dict, or a sum of them) that held it up longest."""
    c = _ScanStats(**{f"{s}_ns": int(stats.get(f"{s}_s", 0) * 1e9) for s in STAGES})
    return _lib.onecopy_bottleneck(ctypes.byref(c)).decode()


class Scan:
    """One pass over a file: an Arrow stream source (the PyCapsule interface) that any Arrow
    consumer reads once (pa.table(scan), duckdb.sql("select ... from scan"), pl.DataFrame(scan));
    its schema can be asked for first without consuming it."""

    def __init__(self, stream):
        self._stream = stream  # POINTER(ArrowArrayStream) on the C heap
        self._cursor: Optional["_Cursor"] = None  # set where the scan reports its stages

    def stats(self) -> dict:
        """Where this scan's time went so far (stats_dict): in onecopyd's scans the daemon's
        stages (storage, decode, copy, consumer_wait, pool_wait) arrive when it ends."""
        if self._cursor is None:
            raise OnecopyError("invalid", "this scan reports no stages (take() does not)")
        return self._cursor.stats()

    def _live(self):
        if self._stream is None:
            raise OnecopyError("invalid", "this scan was already consumed; call scan() again")
        return self._stream

    def __arrow_c_schema__(self) -> object:
        stream = self._live()
        schema = _lib.onecopy_schema_new()
        capsule = _PyCapsule_New(ctypes.cast(schema, ctypes.c_void_p), b"arrow_schema", _SCHEMA_DESTRUCTOR)
        if stream.contents.get_schema(stream, schema) != 0:
            message = stream.contents.get_last_error(stream)
            raise OnecopyError("io", (message or b"the scan's schema is unavailable").decode("utf-8", "replace"))
        return capsule

    def __arrow_c_stream__(self, requested_schema: Optional[object] = None) -> object:
        stream, self._stream = self._live(), None
        return _PyCapsule_New(ctypes.cast(stream, ctypes.c_void_p), b"arrow_array_stream", _STREAM_DESTRUCTOR)

    @property
    def schema(self):
        """The scan's schema as a pyarrow.Schema, without consuming the scan."""
        import pyarrow as pa

        return pa.schema(self)

    def read_all(self):
        """Every batch, as one pyarrow.Table (consumes the scan)."""
        import pyarrow as pa

        return pa.table(self)

    def __del__(self):
        if getattr(self, "_stream", None) is not None:
            _lib.onecopy_stream_free(self._stream)
            self._stream = None


class _Cursor:
    """Owns an onecopy_cursor handle."""

    def __init__(self, handle: ctypes.c_void_p):
        self._handle = handle

    def position(self) -> tuple[int, int]:
        unit, rows = ctypes.c_uint64(), ctypes.c_uint64()
        _lib.onecopy_cursor_position(self._handle, ctypes.byref(unit), ctypes.byref(rows))
        return unit.value, rows.value

    def units(self) -> int:
        return int(_lib.onecopy_cursor_units(self._handle))

    def stats(self) -> dict:
        out = _ScanStats()
        _lib.onecopy_cursor_stats(self._handle, ctypes.byref(out))
        return stats_dict(out)

    def error(self) -> Optional[OnecopyError]:
        err = ctypes.create_string_buffer(_ERRLEN)
        rc = _lib.onecopy_cursor_error(self._handle, err, _ERRLEN)
        return OnecopyError(_ERROR_CLASSES.get(rc, "unknown"), err.value.decode("utf-8", "replace")) if rc else None

    def __del__(self):
        if getattr(self, "_handle", None):
            _lib.onecopy_cursor_free(self._handle)
            self._handle = None
