# SPDX-License-Identifier: Apache-2.0
"""A shuffled group's next part under a filter, taken before the group is read.

A shuffled group is read whole and then permuted (onecopy.torch.Dataset._group_parts), so its
first part waits for every projected column of every file in the group. Under a filter, that part
needs only the rows it holds: here the group's kept rows are found first, by scans that read what
the filter reads plus one small column and report row numbers (ScanRequest.row_numbers); the
group's permutation is drawn over them exactly as over the group; and the part's rows are taken
from each file (a take reads only the bytes its rows need), while the whole group is read on the
prefetch thread. The part equals the one the group gives, row for row
(tests/python/test_torch_dataset.py compares them)."""

from __future__ import annotations

import concurrent.futures
import re
from typing import Callable, NamedTuple, Optional, Sequence

import numpy as np
import pyarrow as pa

from onecopy._lib import OnecopyError
from onecopy._native import Batches
from onecopy._request import ROW_NUMBER_COLUMN

# Files of a group whose row scans or takes run at once.
_FILES_AT_ONCE = 8


class EarlyPart(NamedTuple):
    part: pa.RecordBatch  # rows [given, end) of the group's permuted order
    end: int
    rows: int  # the group's rows under the filter


def probe_column(schema: pa.Schema, columns: Optional[Sequence[str]], filter_text: str) -> str:
    """The one column the row scans project: a projected one the filter names (decoded for the
    filter anyway), else the narrowest fixed-width one, else the first."""
    names = list(columns) if columns else schema.names
    named = [c for c in names if re.search(r"(?<![\w\"])" + re.escape(c) + r"(?![\w\"])", filter_text)
             or f'"{c}"' in filter_text]
    if named:
        return named[0]

    def width(c: str) -> float:
        t = schema.field(c).type
        return t.bit_width if pa.types.is_primitive(t) and not pa.types.is_boolean(t) else float("inf")

    return min(names, key=width)


def early_part(by_file: list[tuple[int, list[tuple[int, int]]]], row_scan: Callable, take: Callable,
               order_of: Callable[[int], np.ndarray], given: int, step: int) -> Optional[EarlyPart]:
    """Rows [given, given + step) of a group's order: @by_file lists the group's files, in the
    order the group reads them, with their ranges; @row_scan(f, ranges) returns a record batch
    iterable of batches whose last column is the rows' numbers; @take(f, rows) the batches of
    those rows of file @f (every projected column); @order_of(n) the group's permutation of n rows. None when the
    group has no row at or after @given."""
    with concurrent.futures.ThreadPoolExecutor(min(len(by_file), _FILES_AT_ONCE),
                                               thread_name_prefix="onecopy-first") as pool:
        kept = list(pool.map(lambda fr: _row_numbers(row_scan(*fr)), by_file))
        n = sum(len(k) for k in kept)
        if given >= n:
            return None
        chosen = order_of(n)[given:given + step]
        # Which file each chosen row is in (by its place in the group's reading order) and its
        # row number there.
        starts = np.cumsum([0] + [len(k) for k in kept])
        in_file = np.searchsorted(starts, chosen, side="right") - 1
        numbers = np.concatenate(kept)[chosen]
        wanted = [(i, np.flatnonzero(in_file == i)) for i in range(len(by_file))]
        wanted = [(i, where) for i, where in wanted if where.size]
        taken = list(pool.map(lambda iw: take(by_file[iw[0]][0], numbers[iw[1]]), wanted))
    # The takes' rows, file after file, gathered into the permuted order.
    place = np.empty(len(chosen), dtype=np.uint64)
    at = 0
    for _, where in wanted:
        place[where] = np.arange(at, at + where.size, dtype=np.uint64)
        at += where.size
    batches = [b for reader in taken for b in reader]
    part = Batches(batches, batches[0].schema).take(place)
    return EarlyPart(part, given + len(chosen), n)


def _row_numbers(reader) -> np.ndarray:
    batches = list(reader)
    if not batches:
        return np.zeros(0, dtype=np.uint64)
    if batches[0].schema.names[-1] != ROW_NUMBER_COLUMN:
        raise OnecopyError("unsupported", f"a row-number scan delivered no {ROW_NUMBER_COLUMN} column, only "
                                          f"{batches[0].schema.names} (an onecopyd older than this library?)")
    return np.concatenate([b.column(b.num_columns - 1).to_numpy() for b in batches])
