# SPDX-License-Identifier: Apache-2.0
"""A Vortex file read through onecopyd (onecopy.open when a daemon serves this machine): the
daemon opens it (an s3:// or rados:// object with its own credentials, as its operator grants;
a local file through a descriptor this process opened) and delivers the batches in its slabs."""

from __future__ import annotations

import os
from typing import Iterable, Optional, Sequence, Union

from onecopy._lib import OnecopyError
from onecopy._native import Client
from onecopy.expr import Expr


class RemoteFile:
    """A Vortex file that onecopyd reads: row_count, schema, scan, scan_ranges, take and units as
    onecopy.VortexFile has them, each answered by the daemon at `socket`."""

    def __init__(self, path, socket: str):
        self.path = os.fspath(path)
        self.socket = socket
        self._client = Client(socket)
        self._schemas: dict[str, object] = {}
        self._rows: Optional[int] = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        pass

    def __repr__(self) -> str:
        return f"RemoteFile({self.path!r}, socket={self.socket!r})"

    @property
    def row_count(self) -> int:
        if self._rows is None:
            units = self._client.units(self.path)
            self._rows = int(units[-1][1]) if units else 0
        return self._rows

    def __len__(self) -> int:
        return self.row_count

    def schema_with(self, strings: str = "views"):
        """The file's schema with strings as `strings` says (VortexFile.schema_with): the schema
        of an empty scan, which reads no data."""
        import pyarrow as pa

        if strings not in self._schemas:
            self._schemas[strings] = pa.schema(self._client.scan_stream(self.path, row_range=(0, 0),
                                                                        strings=strings))
        return self._schemas[strings]

    @property
    def schema(self):
        return self.schema_with("views")

    def __arrow_c_schema__(self) -> object:
        return self.schema.__arrow_c_schema__()

    def scan(self, columns: Optional[Sequence[str]] = None, filter: Union[str, Expr, None] = None,
             batch_rows: int = 0, row_range: Optional[tuple[int, int]] = None, strings: str = "views",
             device: str = "cpu", row_numbers: bool = False):
        """VortexFile.scan, decoded by the daemon (on its GPU with device="cuda:N")."""
        if device != "cpu":
            return self._client.scan(self.path, columns, filter, batch_rows, row_range, device=device,
                                     row_numbers=row_numbers)
        return self._client.scan_stream(self.path, columns, filter, batch_rows, row_range, strings, row_numbers)

    def scan_ranges(self, ranges: Sequence[tuple[int, int]], columns: Optional[Sequence[str]] = None,
                    filter: Union[str, Expr, None] = None, batch_rows: int = 0, strings: str = "views",
                    device: str = "cpu", row_numbers: bool = False):
        """VortexFile.scan_ranges, decoded by the daemon."""
        return self._client.scan_ranges(self.path, ranges, columns, filter, batch_rows, strings, device,
                                        row_numbers)

    def take(self, indices: Iterable[int], columns: Optional[Sequence[str]] = None, strings: str = "views"):
        """VortexFile.take through the daemon: one take request, which the daemon reads as the
        in-process take does (only the bytes the rows need) and delivers as one batch in its
        slabs. A stream of one batch."""
        import numpy as np
        import pyarrow as pa

        idx = np.asarray(indices if isinstance(indices, np.ndarray) else list(indices), dtype=np.int64).ravel()
        if idx.size and idx.min() < 0:
            raise ValueError("take() indices must be non-negative")
        rows = self.row_count
        past = np.flatnonzero(idx >= rows)
        if past.size:
            raise OnecopyError("invalid", f"take index {int(idx[past[0]])} (position {int(past[0])}) is past the "
                                          f"file's {rows} rows")
        reader = pa.RecordBatchReader.from_stream(self._client.take(self.path, idx, columns, strings))
        return pa.RecordBatchReader.from_batches(reader.schema, list(reader))

    def units(self, max_rows: int = 0) -> list[tuple[int, int]]:
        """VortexFile.units, computed by the daemon."""
        return self._client.units(self.path, max_rows)

    def inspect(self) -> dict:
        raise OnecopyError("unsupported", "inspect reads the file's layout in this process: "
                                          "onecopy.open(path, daemon=False).inspect()")
