# SPDX-License-Identifier: Apache-2.0
"""onecopy.Dataset: the files of a directory, an s3:// prefix, a glob, a rados:// pattern or a
list of those as one table, read in this process or through onecopyd.

    ds = onecopy.dataset("s3://bucket/train/")
    ds.schema, ds.row_count, ds.files
    hits = ds.scan(columns=["id"], filter=onecopy.col("score") > 0.5).read_all()
    rows = pa.table(ds.take([0, 70_001, 3]))

The rows are the concatenation of the files' rows in the order of `files` (each pattern's files
sorted, as onecopy.expand gives them). Every operation is the files' own: a scan is each file's
scan in turn (so each file's statistics prune the filter on their own), a take is one take per
file. Files are opened on first use and kept open."""

from __future__ import annotations

import os
import re
from typing import Iterable, Iterator, Optional, Sequence, Union

from onecopy._lib import OnecopyError
from onecopy._native import Batches, Client, VortexFile, expand
from onecopy._remote_file import RemoteFile
from onecopy.expr import Expr

# A filter's identifiers: "quoted" (with "" inside) or bare; 'string literals' are matched so
# that their text is skipped.
_FILTER_TOKENS = re.compile(r"""'(?:[^']|'')*'|"((?:[^"]|"")*)"|([A-Za-z_][A-Za-z0-9_]*)""")


def is_pattern(path: str) -> bool:
    """Whether @path names several files, as net/open_uri.cpp expand_uri reads it: an s3:// prefix
    (ending in '/') or glob, a rados:// pool, prefix or glob, a local glob or directory."""
    if path.startswith("s3://"):
        return path.endswith("/") or any(c in path[5:] for c in "*?[")
    if path.startswith("rados://"):
        obj = path[len("rados://"):].partition("/")[2]
        return obj == "" or obj.endswith("/") or any(c in obj for c in "*?[")
    if "://" in path:
        return False
    return any(c in path for c in "*?[") or os.path.isdir(path)


def list_files(uris, socket: Optional[str], unit_rows: int = 0) -> list[tuple[str, Optional[dict]]]:
    """(uri, entry) of each file @uris names, in order: each pattern's files sorted, listed by the
    daemon at @socket or, without one, by onecopy.expand here. An s3:// prefix or glob through the
    daemon is one request (Client.dataset_index: one listing and the prefix's manifest), whose
    entry for each file gives its "rows" and "units" (of at most @unit_rows rows; 0: the
    shard_unit_rows knob); entry None elsewhere."""
    items = [uris] if isinstance(uris, (str, os.PathLike)) else list(uris)
    if not items:
        raise ValueError("no dataset URIs given")
    out: list[tuple[str, Optional[dict]]] = []
    for item in map(os.fspath, items):
        if socket and item.startswith("s3://") and is_pattern(item):
            out.extend((f["uri"], f) for f in Client(socket).dataset_index(item, unit_rows)["files"])
        else:
            out.extend((u, None) for u in (Client(socket).list(item) if socket else expand(item)))
    return out


def filter_columns(filter: Union[str, Expr], names: Sequence[str]) -> list[str]:
    """The columns of @names that @filter (SQL text) names, in schema order: what a count with
    that filter needs to read. Each part of a struct path (`a.b`, `"my col".b`) is a token, so
    its column is among them."""
    named = set()
    for m in _FILTER_TOKENS.finditer(str(filter)):
        if m.group(1) is not None:
            named.add(m.group(1).replace('""', '"'))
        elif m.group(2) is not None:
            named.add(m.group(2))
    return [n for n in names if n in named]


def schema_difference(a, b) -> Optional[str]:
    """The first difference between pyarrow schemas @a (the dataset's) and @b (a file's), in
    words, or None when they are equal (metadata aside)."""
    for i, (fa, fb) in enumerate(zip(a, b)):
        if fa.name != fb.name:
            return f"column {i} is {fa.name!r} in the dataset and {fb.name!r} in this file"
        if not fa.type.equals(fb.type):
            return f"column {fa.name!r} is {fa.type} in the dataset and {fb.type} in this file"
        if fa.nullable != fb.nullable:
            return f"column {fa.name!r} is {'' if fa.nullable else 'not '}nullable in the dataset and " \
                   f"{'' if fb.nullable else 'not '}nullable in this file"
    if len(a) > len(b):
        return f"this file lacks column {a.field(len(b)).name!r} ({a.field(len(b)).type})"
    if len(b) > len(a):
        return f"this file has a column the dataset lacks: {b.field(len(a)).name!r} ({b.field(len(a)).type})"
    return None


def renumbered(batch, start: int):
    """@batch with @start added to its last column, "_row_number" (a file's row numbers made the
    dataset's)."""
    import numpy as np
    import pyarrow as pa

    numbers = np.asarray(batch.column(batch.num_columns - 1)) + np.uint64(start)
    return pa.RecordBatch.from_arrays(batch.columns[:-1] + [pa.array(numbers)], schema=batch.schema)


class Dataset:
    """Files as one table: `files`, `schema` (every file's, checked equal), `row_count`,
    `scan`, `take`, `count`, the Arrow stream protocol (the full scan) and `to_torch`.

    `socket` None: the files are read in this process (VortexFile); a path: by the onecopyd at
    that socket (RemoteFile), which also lists the patterns. onecopy.dataset and Client.dataset
    choose it; build a Dataset through them."""

    def __init__(self, uris, socket: Optional[str] = None):
        self.socket = socket
        listed = list_files(uris, socket)
        self.files: list[str] = [uri for uri, _ in listed]
        self._rows: list[Optional[int]] = [None if e is None else int(e["rows"]) for _, e in listed]  # None: ask the file
        self._open: dict[int, Union[VortexFile, RemoteFile]] = {}
        self._schema = None

    def __repr__(self) -> str:
        where = f", socket={self.socket!r}" if self.socket else ""
        return f"Dataset({len(self.files)} files{where})"

    def file(self, i: int) -> Union[VortexFile, RemoteFile]:
        """File @i of `files`, opened on first use (a VortexFile, or a RemoteFile through the
        daemon)."""
        if i not in self._open:
            uri = self.files[i]
            self._open[i] = RemoteFile(uri, self.socket) if self.socket else VortexFile(uri)
        return self._open[i]

    @property
    def file_rows(self) -> list[int]:
        """Each file's row count, in the order of `files`."""
        return [self._file_row_count(i) for i in range(len(self.files))]

    @property
    def row_count(self) -> int:
        return sum(self.file_rows)

    def __len__(self) -> int:
        return self.row_count

    @property
    def schema(self):
        """The dataset's pyarrow.Schema (strings as views): every file's, the first file's
        checked against each other's. OnecopyError "invalid" naming the first file that differs
        and how."""
        return self._checked_schema()

    def _checked_schema(self):
        if self._schema is None:
            first = self.file(0).schema
            for i in range(1, len(self.files)):
                why = schema_difference(first, self.file(i).schema)
                if why is not None:
                    raise OnecopyError("invalid", f"{self.files[i]} does not have the schema of {self.files[0]}: {why}")
            self._schema = first
        return self._schema

    def __arrow_c_schema__(self) -> object:
        return self.schema.__arrow_c_schema__()

    def scan(self, columns: Optional[Sequence[str]] = None, filter: Union[str, Expr, None] = None,
             batch_rows: int = 0, strings: str = "views", row_numbers: bool = False):
        """Every file's scan (VortexFile.scan's arguments) in the order of `files`, as one
        pyarrow.RecordBatchReader (an Arrow stream source with read_all()). The first file's scan
        starts here, so a filter that does not parse or bind raises OnecopyError at once; each
        next one when the previous is read, pruned by its own statistics. With `row_numbers`, each
        batch ends with the column "_row_number" (uint64): its rows' numbers in the dataset, as
        take() numbers them (a file's own row numbers plus the rows of the files before it)."""
        import pyarrow as pa

        self._checked_schema()  # a file whose schema differs is an error before any batch

        def file_scan(i: int):
            return pa.RecordBatchReader.from_stream(self.file(i).scan(columns, filter, batch_rows, strings=strings,
                                                                      row_numbers=row_numbers))

        first = file_scan(0)

        def batches() -> Iterator:
            yield from first
            start = 0
            for i in range(1, len(self.files)):
                start += self._file_row_count(i - 1)  # open: its scan has just been read
                yield from (renumbered(b, start) for b in file_scan(i)) if row_numbers else file_scan(i)

        return pa.RecordBatchReader.from_batches(first.schema, batches())

    def _file_row_count(self, i: int) -> int:
        """File @i's rows, from the listing or the file, opening no other file (file_rows opens them all)."""
        if self._rows[i] is None:
            self._rows[i] = self.file(i).row_count
        return self._rows[i]

    def __arrow_c_stream__(self, requested_schema: Optional[object] = None) -> object:
        """The full scan, for pa.table(ds), duckdb and polars."""
        return self.scan().__arrow_c_stream__(requested_schema)

    def count(self, filter: Union[str, Expr, None] = None) -> int:
        """Rows where @filter is TRUE (all rows without one: the files' row counts, nothing
        read), reading only the columns the filter names."""
        if filter is None:
            return self.row_count
        names = filter_columns(filter, self.schema.names) or self.schema.names[:1]
        return sum(batch.num_rows for batch in self.scan(names, filter))

    def take(self, indices: Iterable[int], columns: Optional[Sequence[str]] = None, strings: str = "views"):
        """Rows @indices of the dataset (numbered across its files in order; any order, repeats
        allowed; a numpy array works) as a pyarrow.RecordBatchReader of one batch, in the order
        asked. One take per file; over several files, each selected value is copied once more to
        put the rows in order. Negative indices raise ValueError; indices at or past row_count OnecopyError."""
        import numpy as np
        import pyarrow as pa

        idx = np.asarray(indices if isinstance(indices, np.ndarray) else list(indices), dtype=np.int64).ravel()
        if idx.size and idx.min() < 0:
            raise ValueError("take() indices must be non-negative")
        self._checked_schema()
        ends = np.cumsum(self.file_rows)
        past = np.flatnonzero(idx >= ends[-1])
        if past.size:
            raise OnecopyError("invalid", f"take index {int(idx[past[0]])} (position {int(past[0])}) is past the "
                                          f"dataset's {int(ends[-1])} rows")
        if idx.size == 0:
            return self.file(0).take([], columns, strings)
        file_of = np.searchsorted(ends, idx, side="right")
        starts = ends - np.asarray(self.file_rows)
        # One take per file, its rows in the order asked.
        files = np.unique(file_of).tolist()
        parts = [pa.table(self.file(f).take(idx[file_of == f] - starts[f], columns, strings)) for f in files]
        if len(parts) == 1:
            table = parts[0]
        else:
            # Put in the order asked by one gather in the library (each value copied once): the
            # takes, in file order, hold the positions asked sorted by file, so position i is row
            # where[i] of them. pyarrow has no take from string views, and a slice per run of one
            # file's rows is a Python call per row where the files alternate.
            order = np.argsort(file_of, kind="stable")
            where = np.empty_like(order)
            where[order] = np.arange(order.size)
            batches = [b for t in parts for b in t.to_batches()]
            table = pa.Table.from_batches([Batches(batches, parts[0].schema).take(where)])
        return pa.RecordBatchReader.from_batches(table.schema, table.to_batches())

    def to_torch(self, **kwargs):
        """onecopy.torch.Dataset over these files, read where this dataset reads (torch's other
        arguments as keywords)."""
        # onecopy.torch builds on this module and needs torch: imported when asked for, as
        # pyarrow's to_pandas imports pandas (tests/python/test_layers.py allows this one edge).
        from onecopy.torch import Dataset as TorchDataset
        return TorchDataset(self.files, socket=self.socket or False, **kwargs)
