# SPDX-License-Identifier: Apache-2.0
"""Scans into GPU memory, as Python sees them: `VortexFile.scan(device="cuda:N")` returns a
DeviceScan, whose batches are DeviceBatch objects of DeviceColumn objects in the GPU's memory.

The library hands an Arrow C Device stream (client/c_api.h, onecopy_scan_device). Each batch is
complete when it arrives (its decodes finished and their error words checked), so no stream
synchronisation is needed to read it. A DeviceColumn exposes its values through the CUDA Array
Interface (version 3), which torch.as_tensor, CuPy and Numba import without a copy; the tensor
keeps the column, and so the batch's device memory, alive. Strings arrive as Arrow offsets and
bytes, two arrays; booleans as an Arrow bitmap (bits, not one value per byte)."""

from __future__ import annotations

import ctypes
from typing import Optional

from onecopy._native import _ERROR_CLASSES, _ERRLEN, ArrowArray, ArrowSchema, OnecopyError, _check, _lib

ARROW_DEVICE_CUDA = 2


class ArrowDeviceArray(ctypes.Structure):
    _fields_ = [("array", ArrowArray), ("device_id", ctypes.c_int64), ("device_type", ctypes.c_int32),
                ("sync_event", ctypes.c_void_p), ("reserved", ctypes.c_int64 * 3)]


class ArrowDeviceArrayStream(ctypes.Structure):
    pass


ArrowDeviceArrayStream._fields_ = [
    ("device_type", ctypes.c_int32),
    ("get_schema", ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ArrowDeviceArrayStream), ctypes.POINTER(ArrowSchema))),
    ("get_next", ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ArrowDeviceArrayStream),
                                  ctypes.POINTER(ArrowDeviceArray))),
    ("get_last_error", ctypes.CFUNCTYPE(ctypes.c_char_p, ctypes.POINTER(ArrowDeviceArrayStream))),
    ("release", ctypes.CFUNCTYPE(None, ctypes.POINTER(ArrowDeviceArrayStream))),
    ("private_data", ctypes.c_void_p),
]

_lib.onecopy_scan_device.argtypes = [
    ctypes.c_void_p, ctypes.c_int, ctypes.POINTER(ctypes.c_char_p), ctypes.c_size_t, ctypes.c_char_p,
    ctypes.c_uint64, ctypes.c_int64, ctypes.c_int64, ctypes.c_size_t, ctypes.POINTER(ArrowDeviceArrayStream),
    ctypes.c_char_p, ctypes.c_size_t]
_lib.onecopy_daemon_scan_device.argtypes = [
    ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p), ctypes.c_size_t, ctypes.c_char_p,
    ctypes.c_uint64, ctypes.c_int64, ctypes.c_int64, ctypes.c_int, ctypes.c_size_t,
    ctypes.POINTER(ArrowDeviceArrayStream), ctypes.c_char_p, ctypes.c_size_t]

# Arrow C format strings of fixed-width types -> the CUDA Array Interface's typestr.
_TYPESTR = {"c": "|i1", "C": "|u1", "s": "<i2", "S": "<u2", "i": "<i4", "I": "<u4", "l": "<i8", "L": "<u8",
            "e": "<f2", "f": "<f4", "g": "<f8", "tdD": "<i4", "tdm": "<i8"}


def parse_device(device: str) -> int:
    """The CUDA device index `device` ("cuda" or "cuda:N") names; ValueError for anything else."""
    text = str(device)
    if text == "cuda":
        return 0
    if text.startswith("cuda:") and text[5:].isdigit():
        return int(text[5:])
    raise ValueError(f'device is "cpu" or "cuda[:N]", not {device!r}')


def typestr_of(fmt: str) -> Optional[str]:
    """The CUDA Array Interface typestr of Arrow format `fmt`, or None when its values are not
    one fixed-width number per row (strings, booleans, decimals, nested types)."""
    if fmt in _TYPESTR:
        return _TYPESTR[fmt]
    if fmt.startswith(("ts", "tD", "tt")):  # timestamps, durations, times: i64 (tts/ttm are i32)
        return "<i4" if fmt in ("tts", "ttm") else "<i8"
    return None


class _Schema:
    """The names and Arrow formats of a stream's top-level columns."""

    def __init__(self, schema: ArrowSchema):
        children = ctypes.cast(schema.children, ctypes.POINTER(ctypes.POINTER(ArrowSchema)))
        self.names = [children[i].contents.name.decode() for i in range(schema.n_children)]
        self.formats = [children[i].contents.format.decode() for i in range(schema.n_children)]


class DeviceColumn:
    """One column of a DeviceBatch, in device memory: `values`, `validity` and `offsets` are
    device addresses (0 where absent), `length` rows, `null_count` of them null, `format` the
    Arrow format string. `__cuda_array_interface__` describes the values of a fixed-width
    column; torch.as_tensor(column, device=...) wraps them without a copy."""

    def __init__(self, batch: "DeviceBatch", index: int, name: str, fmt: str):
        array = ctypes.cast(batch._array.array.children, ctypes.POINTER(ctypes.POINTER(ArrowArray)))[index].contents
        buffers = ctypes.cast(array.buffers, ctypes.POINTER(ctypes.c_void_p))
        self._batch = batch  # keeps the device memory alive
        self.name, self.format, self.device = name, fmt, batch.device
        self.length, self.null_count, self._offset = int(array.length), int(array.null_count), int(array.offset)
        self.validity = buffers[0] or 0
        if fmt in ("u", "z"):
            self.offsets, self.values = buffers[1] or 0, buffers[2] or 0
        else:
            self.offsets, self.values = 0, (buffers[1] or 0) if array.n_buffers > 1 else 0

    @property
    def __cuda_array_interface__(self) -> dict:
        typestr = typestr_of(self.format)
        if typestr is None:
            raise OnecopyError("unsupported", f"column {self.name!r} ({self.format}) is not one fixed-width value "
                                              "per row; read its offsets and values addresses instead")
        if self.null_count != 0:
            raise OnecopyError("unsupported", f"column {self.name!r} has {self.null_count} nulls, which the CUDA "
                                              "Array Interface cannot carry; filter them out (IS NOT NULL)")
        itemsize = int(typestr[2:])
        return {"shape": (self.length,), "typestr": typestr, "version": 3, "strides": None, "stream": None,
                "data": (self.values + self._offset * itemsize if self.length else 0, False)}


class DeviceBatch:
    """A record batch in the memory of CUDA device `device`: `columns` by name, `num_rows`."""

    def __init__(self, array: ArrowDeviceArray, schema: _Schema):
        self._array = array
        self.device = int(array.device_id)
        self.num_rows = int(array.array.length)
        self.columns = {name: DeviceColumn(self, i, name, fmt)
                        for i, (name, fmt) in enumerate(zip(schema.names, schema.formats))}

    def __del__(self):
        release = self._array.array.release
        if release:
            ctypes.CFUNCTYPE(None, ctypes.POINTER(ArrowArray))(release)(ctypes.byref(self._array.array))


def consumer_stream(device: int) -> int:
    """The cudaStream_t torch queues work on for `device` (its current stream), which a daemon
    batch's release waits for; 0 (the whole device) without torch's CUDA."""
    try:
        import torch
    except ImportError:
        return 0
    if not torch.cuda.is_available():
        return 0
    return int(torch.cuda.current_stream(device).cuda_stream)


class DeviceScan:
    """One pass over a file into GPU memory: an iterator of DeviceBatch. `start(stream, err)`
    makes the C call that fills the stream (in process, or through onecopyd)."""

    def __init__(self, device: int, start):
        self._stream = ArrowDeviceArrayStream()
        err = ctypes.create_string_buffer(_ERRLEN)
        _check(start(ctypes.byref(self._stream), err), err)
        schema = ArrowSchema()
        if self._stream.get_schema(ctypes.byref(self._stream), ctypes.byref(schema)) != 0:
            raise self._error()
        self._schema = _Schema(schema)
        ctypes.CFUNCTYPE(None, ctypes.POINTER(ArrowSchema))(schema.release)(ctypes.byref(schema))
        self.device = device

    def _error(self) -> OnecopyError:
        """The stream's last error, with its class when the message names one ("corrupt: ...")."""
        message = self._stream.get_last_error(ctypes.byref(self._stream))
        text = (message or b"the device scan failed").decode("utf-8", "replace")
        code = text.split(":", 1)[0]
        return OnecopyError(code if code in _ERROR_CLASSES.values() else "io", text)

    def __iter__(self):
        return self

    def __next__(self) -> DeviceBatch:
        if not self._stream.release:
            raise StopIteration
        array = ArrowDeviceArray()
        if self._stream.get_next(ctypes.byref(self._stream), ctypes.byref(array)) != 0:
            raise self._error()
        if not array.array.release:
            self.close()
            raise StopIteration
        return DeviceBatch(array, self._schema)

    def close(self) -> None:
        if self._stream.release:
            self._stream.release(ctypes.byref(self._stream))

    def __del__(self):
        self.close()
