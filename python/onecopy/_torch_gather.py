# SPDX-License-Identifier: Apache-2.0
"""Record batches as onecopy.torch's items: a batch's columns as tensors (DLPack views where the
layout allows), batches cut into batch_rows rows, and single samples."""

from __future__ import annotations

from typing import Any, Iterator

import pyarrow as pa
import torch

import onecopy

def column_tensors(name: str, arr: pa.Array, out: dict) -> None:
    """Adds the tensors of one column to @out: a DLPack view for fixed-width columns, values plus
    "<name>.offsets" for lists, a list of str for strings."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    t = arr.type
    if arr.null_count:
        raise onecopy.OnecopyError(
            "invalid", f"column {name!r} has {arr.null_count} nulls in this batch; tensors have no "
                       f"nulls: add `{name} IS NOT NULL` to the filter")
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        # The values the offsets span, cut from the child array: ListArray.flatten() would import
        # pyarrow.compute (a quarter second, in the first batch) and call a kernel per batch.
        offsets = torch.from_dlpack(arr.offsets)  # len(arr) + 1, from the array's own offset on
        lo, hi = int(offsets[0]), int(offsets[-1])
        out[name] = torch.from_dlpack(arr.values.slice(lo, hi - lo))
        out[name + ".offsets"] = offsets - lo if lo else offsets
    elif pa.types.is_boolean(t):
        out[name] = torch.from_numpy(arr.to_numpy(zero_copy_only=False))  # Arrow packs bits
    elif pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        out[name] = arr.to_pylist()
    elif pa.types.is_timestamp(t) or pa.types.is_date64(t) or pa.types.is_duration(t):
        out[name] = torch.from_dlpack(arr.view(pa.int64()))
    elif pa.types.is_date32(t):
        out[name] = torch.from_dlpack(arr.view(pa.int32()))
    elif pa.types.is_fixed_size_list(t):
        size = t.list_size
        out[name] = torch.from_dlpack(arr.values.slice(arr.offset * size, len(arr) * size)).reshape(len(arr), size)
    else:
        out[name] = torch.from_dlpack(arr)


def batch_tensors(batch: pa.RecordBatch) -> dict:
    out: dict[str, Any] = {}
    for name, arr in zip(batch.schema.names, batch.columns):
        column_tensors(name, arr, out)
    return out


def cut(batches: Iterator[pa.RecordBatch], step: int) -> Iterator[pa.Table]:
    """@batches' rows in tables of @step rows (the last shorter): slices of one batch where a
    table lies within it, else of the few it spans."""
    pieces: list[pa.RecordBatch] = []
    have = 0
    for batch in batches:
        pieces.append(batch)
        have += batch.num_rows
        while have >= step:
            table = pa.Table.from_batches(pieces)
            yield table.slice(0, step)
            rest = table.slice(step)
            pieces = [b for b in rest.to_batches() if b.num_rows]
            have -= step
    if have:
        yield pa.Table.from_batches(pieces)


def sample(tensors: dict, names: list[str], i: int) -> dict:
    """Row @i of a batch's tensors: scalars, token views, strings."""
    out = {}
    for name in names:
        v = tensors[name]
        off = tensors.get(name + ".offsets")
        out[name] = v[int(off[i]):int(off[i + 1])] if off is not None else v[i]
    return out
