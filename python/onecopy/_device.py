# SPDX-License-Identifier: Apache-2.0
"""Scans into GPU memory, as Python sees them: `VortexFile.scan(device="cuda:N")` returns a
DeviceScan, whose batches are DeviceBatch objects of DeviceColumn objects in the GPU's memory.

The library hands an Arrow C Device stream (client/c_api.h, onecopy_scan). Each batch is
complete when it arrives (its decodes finished and their error words checked), so no stream
synchronisation is needed to read it. A DeviceColumn exposes its values through the CUDA Array
Interface (version 3), which torch.as_tensor, CuPy and Numba import without a copy; the tensor
keeps the column, and so the batch's device memory, alive. Strings and lists arrive as Arrow
offsets (`offsets_buffer()`) and values (a string's bytes, a list's `children[0]`); booleans as
an Arrow bitmap (`bits_buffer()`: bits, not one value per byte).

device="host-reference" runs the device scan's own steps (fused plans, gathers, placement) on
the host with the kernels' host executors (ONECOPY_DEVICE_HOST_REFERENCE): its batches live in
host memory and expose the NumPy array interface instead, so everything above the CUDA calls,
onecopy.torch's device path included, runs and is tested where there is no GPU."""

from __future__ import annotations

import ctypes
from typing import Optional

from onecopy._lib import _ERROR_CLASSES, _ERRLEN, ArrowArray, ArrowSchema, OnecopyError, _check
from onecopy._scan import _Cursor

ARROW_DEVICE_CPU, ARROW_DEVICE_CUDA = 1, 2
HOST_REFERENCE = -2  # ONECOPY_DEVICE_HOST_REFERENCE (client/c_api.h)


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

# Arrow C format strings of fixed-width types -> the CUDA Array Interface's typestr.
_TYPESTR = {"c": "|i1", "C": "|u1", "s": "<i2", "S": "<u2", "i": "<i4", "I": "<u4", "l": "<i8", "L": "<u8",
            "e": "<f2", "f": "<f4", "g": "<f8", "tdD": "<i4", "tdm": "<i8"}


def parse_device(device: str) -> int:
    """The CUDA device index `device` ("cuda" or "cuda:N") names, or HOST_REFERENCE for
    "host-reference"; ValueError for anything else."""
    text = str(device)
    if text == "cuda":
        return 0
    if text.startswith("cuda:") and text[5:].isdigit():
        return int(text[5:])
    if text == "host-reference":
        return HOST_REFERENCE
    raise ValueError(f'device is "cpu", "cuda[:N]" or "host-reference", not {device!r}')


def typestr_of(fmt: str) -> Optional[str]:
    """The CUDA Array Interface typestr of Arrow format `fmt`, or None when its values are not
    one fixed-width number per row (strings, booleans, decimals, nested types)."""
    if fmt in _TYPESTR:
        return _TYPESTR[fmt]
    if fmt.startswith(("ts", "tD", "tt")):  # timestamps, durations, times: i64 (tts/ttm are i32)
        return "<i4" if fmt in ("tts", "ttm") else "<i8"
    return None


class _Field:
    """A column's name, Arrow format and child fields (a list's values, a struct's members)."""

    def __init__(self, schema: ArrowSchema):
        self.name = schema.name.decode() if schema.name else ""
        self.format = schema.format.decode()
        children = ctypes.cast(schema.children, ctypes.POINTER(ctypes.POINTER(ArrowSchema)))
        self.children = [_Field(children[i].contents) for i in range(schema.n_children)]


class _Buffer:
    """`length` values of `typestr` at `address` in the memory of the batch `owner` (kept
    alive), under the interface of that memory: CUDA's or NumPy's."""

    def __init__(self, owner: "DeviceBatch", address: int, typestr: str, length: int):
        self._owner = owner
        self._interface = {"shape": (length,), "typestr": typestr, "version": 3, "strides": None,
                           "data": (address if length else 0, False)}
        if owner.on_cuda:
            self.__cuda_array_interface__ = dict(self._interface, stream=None)
        else:
            self.__array_interface__ = self._interface


class DeviceColumn:
    """One column of a DeviceBatch, in its memory: `values`, `validity` and `offsets` are
    addresses (0 where absent), `length` rows from row `offset` of the buffers, `null_count` of
    them null, `format` the Arrow format string, `children` a list's or struct's child columns.
    A fixed-width column carries the CUDA Array Interface (host-reference batches: the NumPy
    one) for its values; torch.as_tensor(column, device=...) wraps them without a copy.

    A batch whose struct is a slice (offset > 0, or children longer than it) gives each column
    its rows: `offset` and `length` count the struct's slice, and `null_count` is then the
    child's own (its whole length), so a column with nulls outside the slice is refused too."""

    def __init__(self, batch: "DeviceBatch", array: ArrowArray, field: _Field,
                 window: Optional[tuple[int, int]] = None):
        buffers = ctypes.cast(array.buffers, ctypes.POINTER(ctypes.c_void_p))
        self._batch = batch  # keeps the memory alive
        self.name, self.format, self.device = field.name, field.format, batch.device
        self.length, self.null_count, self.offset = int(array.length), int(array.null_count), int(array.offset)
        if window is not None:  # a struct member: rows [offset + window[0], + window[1]) of it
            self.offset, self.length = self.offset + window[0], window[1]
        self.validity = buffers[0] or 0
        if self.format in ("u", "z"):
            self.offsets, self.values = buffers[1] or 0, buffers[2] or 0
        elif self.format == "+l":
            self.offsets, self.values = buffers[1] or 0, 0
        else:
            self.offsets, self.values = 0, (buffers[1] or 0) if array.n_buffers > 1 else 0
        kids = ctypes.cast(array.children, ctypes.POINTER(ctypes.POINTER(ArrowArray)))
        self.children = [DeviceColumn(batch, kids[i].contents, f) for i, f in enumerate(field.children)]

    def _values(self) -> _Buffer:
        typestr = typestr_of(self.format)
        if typestr is None:
            raise OnecopyError("unsupported", f"column {self.name!r} ({self.format}) is not one fixed-width value "
                                              "per row; read its offsets and values addresses instead")
        if self.null_count != 0:
            raise OnecopyError("unsupported", f"column {self.name!r} has {self.null_count} nulls, which an array "
                                              "interface cannot carry; filter them out (IS NOT NULL)")
        return _Buffer(self._batch, self.values + self.offset * int(typestr[2:]), typestr, self.length)

    @property
    def __cuda_array_interface__(self) -> dict:
        if not self._batch.on_cuda:
            raise AttributeError("a host-reference column has __array_interface__")
        return self._values().__cuda_array_interface__

    @property
    def __array_interface__(self) -> dict:
        if self._batch.on_cuda:
            raise AttributeError("a CUDA column has __cuda_array_interface__")
        return self._values().__array_interface__

    def offsets_buffer(self) -> _Buffer:
        """The length + 1 int32 offsets of a string or list column, from its first row (not
        rebased: a list's first offset indexes its child's values)."""
        if not self.offsets:
            raise OnecopyError("unsupported", f"column {self.name!r} ({self.format}) has no offsets")
        return _Buffer(self._batch, self.offsets + 4 * self.offset, "<i4", self.length + 1)

    def bytes_buffer(self, begin: int, end: int) -> _Buffer:
        """Bytes [begin, end) of a string column's values (its first and last offsets: the
        bytes of its rows)."""
        return _Buffer(self._batch, self.values + begin, "|u1", end - begin)

    def bits_buffer(self) -> _Buffer:
        """The bytes of a boolean column's bitmap that hold bits [offset, offset + length)."""
        if self.format != "b":
            raise OnecopyError("unsupported", f"column {self.name!r} ({self.format}) is not boolean")
        return _Buffer(self._batch, self.values + self.offset // 8, "|u1",
                       (self.offset % 8 + self.length + 7) // 8)


class DeviceBatch:
    """A record batch in the memory of CUDA device `device` (or, for a host-reference scan,
    the host's, `device` HOST_REFERENCE): `columns` by name, `num_rows`."""

    def __init__(self, array: ArrowDeviceArray, fields: list[_Field]):
        self._array = array
        self.on_cuda = int(array.device_type) == ARROW_DEVICE_CUDA
        self.device = int(array.device_id) if self.on_cuda else HOST_REFERENCE
        self.num_rows = int(array.array.length)
        kids = ctypes.cast(array.array.children, ctypes.POINTER(ctypes.POINTER(ArrowArray)))
        window = (int(array.array.offset), self.num_rows)  # the struct's rows of its members
        self.columns = {f.name: DeviceColumn(self, kids[i].contents, f, window) for i, f in enumerate(fields)}

    def __del__(self):
        release = self._array.array.release
        if release:
            ctypes.CFUNCTYPE(None, ctypes.POINTER(ArrowArray))(release)(ctypes.byref(self._array.array))


def consumer_stream(device: int) -> int:
    """The cudaStream_t torch queues work on for `device` (its current stream), which a daemon
    batch's release waits for; 0 (the whole device) without torch's CUDA, and for the host
    reference."""
    if device < 0:
        return 0
    try:
        import torch
    except ImportError:
        return 0
    if not torch.cuda.is_available():
        return 0
    return int(torch.cuda.current_stream(device).cuda_stream)


class DeviceScan:
    """One pass over a file into GPU memory: an iterator of DeviceBatch. `start(stream, cursor,
    err)` makes the C call that fills the stream and the cursor (in process, or through
    onecopyd). `position` is the (unit, rows) position after the last batch of a scan of units
    or a shard (Client.scan's `start` resumes there); `stats()` as Scan.stats."""

    def __init__(self, device: int, start):
        self._stream = ArrowDeviceArrayStream()
        err = ctypes.create_string_buffer(_ERRLEN)
        cursor = ctypes.c_void_p()
        _check(start(ctypes.byref(self._stream), ctypes.byref(cursor), err), err)
        self._cursor = _Cursor(cursor)
        schema = ArrowSchema()
        if self._stream.get_schema(ctypes.byref(self._stream), ctypes.byref(schema)) != 0:
            raise self._error()
        self._fields = _Field(schema).children
        ctypes.CFUNCTYPE(None, ctypes.POINTER(ArrowSchema))(schema.release)(ctypes.byref(schema))
        self.device = device
        self.position = self._cursor.position()
        self.units = self._cursor.units()

    def stats(self) -> dict:
        return self._cursor.stats()

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
            raise self._cursor.error() or self._error()
        if not array.array.release:
            self.close()
            raise StopIteration
        self.position = self._cursor.position()
        return DeviceBatch(array, self._fields)

    def close(self) -> None:
        if self._stream.release:
            self._stream.release(ctypes.byref(self._stream))

    def __del__(self):
        self.close()
