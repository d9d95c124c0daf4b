# SPDX-License-Identifier: Apache-2.0
"""libonecopy loaded with ctypes (client/c_api.h): the library itself, its errors, the Arrow C
structs that cross the API, and the capsules that carry them to Arrow consumers. Every other
module of the package binds the functions it calls here, next to its use."""

from __future__ import annotations

import ctypes
import os
from pathlib import Path

_ERRLEN = 4096
_ERROR_CLASSES = {
    1: "io", 2: "timeout", 3: "protocol", 4: "corrupt", 5: "invalid", 6: "unsupported",
    7: "cuda", 8: "not_found", 9: "out_of_memory", 10: "cancelled", 11: "denied",
}


class OnecopyError(Exception):
    """An error from the onecopy library. `code` is the error class ("corrupt", "io", ...)."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code


# The Arrow C structs live on the C heap (onecopy_stream_new / onecopy_schema_new) and are
# passed through; Python only calls a stream's get_schema (the Arrow C stream ABI's first field).
class ArrowSchema(ctypes.Structure):
    pass


class ArrowArray(ctypes.Structure):
    """Storage for one exported array (pyarrow fills it; the library moves it in or out)."""
    _fields_ = [(name, ctypes.c_int64) for name in ("length", "null_count", "offset", "n_buffers", "n_children")] + \
        [(name, ctypes.c_void_p) for name in ("buffers", "children", "dictionary", "release", "private_data")]


class ArrowArrayStream(ctypes.Structure):
    pass


ArrowSchema._fields_ = [("format", ctypes.c_char_p), ("name", ctypes.c_char_p), ("metadata", ctypes.c_char_p),
                        ("flags", ctypes.c_int64), ("n_children", ctypes.c_int64)] + \
    [(name, ctypes.c_void_p) for name in ("children", "dictionary", "release", "private_data")]

ArrowArrayStream._fields_ = [
    ("get_schema", ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ArrowArrayStream), ctypes.POINTER(ArrowSchema))),
    ("get_next", ctypes.c_void_p),
    ("get_last_error", ctypes.CFUNCTYPE(ctypes.c_char_p, ctypes.POINTER(ArrowArrayStream))),
    ("release", ctypes.c_void_p),
    ("private_data", ctypes.c_void_p),
]


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
_lib.onecopy_free_string.argtypes = [ctypes.c_void_p]
_lib.onecopy_free_units.argtypes = [ctypes.POINTER(ctypes.c_uint64)]
_lib.onecopy_version.restype = ctypes.c_char_p


def _check(rc: int, err: ctypes.Array) -> None:
    if rc != 0:
        raise OnecopyError(_ERROR_CLASSES.get(rc, "unknown"), err.value.decode("utf-8", "replace"))


def reload_settings() -> None:
    """Re-reads the ONECOPY_* environment variables (`onecopy defaults` lists them) into the
    library's knobs, and the AWS_* ones (endpoint, region, credentials) at the next S3 read;
    call after changing os.environ, before starting scans. Files already open keep the S3
    client they were opened with. Raises OnecopyError naming the variable when a value is
    invalid."""
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


def version() -> str:
    return _lib.onecopy_version().decode()
