# SPDX-License-Identifier: Apache-2.0
"""onecopy.torch's device path: the batches of device scans (onecopy._device) as torch tensors
in the scan's memory, and a shuffle group's rows gathered there.

A column becomes (values, offsets): offsets is None for one value per row; lists give their
flattened values, strings their UTF-8 bytes (uint8), each with int32 offsets from 0, as
onecopy.torch gives lists on the host. Booleans become torch.bool, fixed-size lists a 2-D
tensor. Columns are wrapped without a copy (a daemon's batches are copied at once instead, so
that its slab ranges go back while the group is read); a group's batches are concatenated on
the device (torch.cat), and every sample of the group is gathered from there with
index_select."""

from __future__ import annotations

from typing import NamedTuple, Optional, Sequence

import numpy as np
import torch

from onecopy._device import DeviceBatch, DeviceColumn, _Buffer, typestr_of
from onecopy._lib import OnecopyError


def _tensor(buffer: _Buffer, device: torch.device) -> torch.Tensor:
    """@buffer as a tensor over the same memory (CUDA Array Interface, or NumPy's for the host
    reference); it keeps the batch alive."""
    if buffer._interface["shape"][0] == 0:  # an empty buffer may have no address
        return torch.empty(0, dtype=torch.from_numpy(np.empty(0, buffer._interface["typestr"])).dtype,
                           device=device)
    if hasattr(buffer, "__cuda_array_interface__"):
        return torch.as_tensor(buffer, device=device)
    return torch.from_numpy(np.asarray(buffer))


def _rebased(values: torch.Tensor, offsets: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The @values that @offsets span, and the offsets from 0 (one read of two offsets)."""
    first, last = offsets[[0, -1]].tolist()
    return values[first:last], offsets - first


def column_tensors(column: DeviceColumn, device: torch.device) -> tuple[torch.Tensor, Optional[torch.Tensor]]:
    """(values, offsets or None) of one top-level column of a device batch; OnecopyError for
    nulls (tensors have none) and for types with no tensor form."""
    if column.null_count:
        raise OnecopyError("invalid", f"column {column.name!r} has {column.null_count} nulls in this batch; tensors "
                                      f"have no nulls: add `{column.name} IS NOT NULL` to the filter")
    fmt = column.format
    if typestr_of(fmt) is not None:
        return _tensor(column._values(), device), None
    if fmt == "b":
        raw = _tensor(column.bits_buffer(), device)
        shifts = torch.arange(8, dtype=torch.uint8, device=raw.device)
        bits = ((raw.unsqueeze(1) >> shifts) & 1).reshape(-1).to(torch.bool)
        return bits[column.offset % 8:column.offset % 8 + column.length], None
    if fmt in ("u", "z"):
        offsets = _tensor(column.offsets_buffer(), device)
        first, last = offsets[[0, -1]].tolist()  # one read: the bytes these rows span
        return _tensor(column.bytes_buffer(first, last), device), offsets - first
    if fmt == "+l":
        values, nested = column_tensors(column.children[0], device)
        if nested is not None:
            raise OnecopyError("unsupported", f"column {column.name!r} is a list of lists, which has no tensor form")
        return _rebased(values, _tensor(column.offsets_buffer(), device))
    if fmt.startswith("+w:"):
        size = int(fmt[3:])
        values, nested = column_tensors(column.children[0], device)
        if nested is not None:
            raise OnecopyError("unsupported", f"column {column.name!r} is a fixed-size list of lists")
        rows = values[column.offset * size:(column.offset + column.length) * size]
        return rows.reshape(column.length, size), None
    raise OnecopyError("unsupported", f"column {column.name!r} ({fmt}) has no tensor form on the device; project "
                                      "it out (columns=) or read it with device='cpu'")


def batch_columns(batch: DeviceBatch, device: torch.device,
                  copy: bool = False) -> dict[str, tuple[torch.Tensor, Optional[torch.Tensor]]]:
    """Every column of @batch as column_tensors gives it: views of the batch's memory, or with
    @copy, copies in torch's (so that the batch can go back at once: a daemon's device batch is
    a lease on its slab, which the client library cannot copy out as it does host batches)."""
    columns = {name: column_tensors(column, device) for name, column in batch.columns.items()}
    if copy:
        columns = {name: (v.clone(), None if o is None else o.clone()) for name, (v, o) in columns.items()}
    return columns


def as_items(columns: dict[str, tuple[torch.Tensor, Optional[torch.Tensor]]]) -> dict:
    """onecopy.torch's item layout: "<col>" values, plus "<col>.offsets" for lists and strings."""
    out = {}
    for name, (values, offsets) in columns.items():
        out[name] = values
        if offsets is not None:
            out[name + ".offsets"] = offsets
    return out


class Part(NamedTuple):
    """Rows of a group as tensors: their item dict, the column names, the row count."""
    tensors: dict
    names: list
    num_rows: int


def _take_varlen(values: torch.Tensor, offsets: torch.Tensor, rows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The values of @rows (int64, on the values' device) of a (values, offsets) column, and
    their offsets from 0: element j of output row r is values[starts[r] + j - out_offsets[r]]."""
    starts = offsets[rows].to(torch.int64)
    lengths = offsets[rows + 1].to(torch.int64) - starts
    out = torch.zeros(len(rows) + 1, dtype=torch.int64, device=values.device)
    torch.cumsum(lengths, 0, out=out[1:])
    total = int(out[-1])
    row_of = torch.repeat_interleave(torch.arange(len(rows), device=values.device), lengths)
    at = starts[row_of] + torch.arange(total, device=values.device) - out[:-1][row_of]
    return values[at], out.to(offsets.dtype)


class DeviceRows:
    """A shuffle group's rows on the device, as onecopy.Batches holds them on the host: its
    batches' columns concatenated (offsets rebased across batches), `num_rows`, and take(rows)
    gathering any rows (a numpy array of row numbers) into a Part."""

    def __init__(self, batches: Sequence[dict], names: Sequence[str], num_rows: int, device: torch.device):
        self.names = list(names)
        self.device = device
        self.num_rows = int(num_rows)
        self._columns: dict[str, tuple[torch.Tensor, Optional[torch.Tensor]]] = {}
        if not batches:
            return
        for name in self.names:
            parts = [b[name] for b in batches]
            if parts[0][1] is None:
                self._columns[name] = (torch.cat([v for v, _ in parts]), None)
                continue
            bases = np.cumsum([0] + [len(v) for v, _ in parts[:-1]])
            offsets = [parts[0][1][:1]] + [o[1:] + int(base) for (_, o), base in zip(parts, bases)]
            self._columns[name] = (torch.cat([v for v, _ in parts]), torch.cat(offsets))

    def take(self, rows: np.ndarray) -> Part:
        rows = np.asarray(rows, dtype=np.int64)
        n = len(rows)
        if n and rows[-1] - rows[0] == n - 1 and (n == 1 or bool(np.all(np.diff(rows) == 1))):
            return self._slice(int(rows[0]), int(rows[0]) + n)
        index = torch.from_numpy(rows).to(self.device)
        out = {}
        for name, (values, offsets) in self._columns.items():
            out[name] = (values.index_select(0, index), None) if offsets is None else _take_varlen(values, offsets,
                                                                                                  index)
        return Part(as_items(out), self.names, n)

    def _slice(self, begin: int, end: int) -> Part:
        """Rows [begin, end): views of the group's tensors (list values rebased by one read)."""
        out = {}
        for name, (values, offsets) in self._columns.items():
            if offsets is None:
                out[name] = (values[begin:end], None)
                continue
            out[name] = _rebased(values, offsets[begin:end + 1])
        return Part(as_items(out), self.names, end - begin)
