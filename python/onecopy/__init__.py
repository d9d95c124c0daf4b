# SPDX-License-Identifier: Apache-2.0
"""onecopy: read Vortex files into Arrow without copies.

    import onecopy, pyarrow as pa
    f = onecopy.open("data.vortex")
    f.schema, f.row_count
    table = pa.table(f.scan(columns=["a", "b"], batch_rows=65536))
    hits = pa.table(f.scan(filter=(onecopy.col("a") > 10) & onecopy.col("b").is_not_null()))
    some = pa.table(f.take([17, 3, 17]))

`scan()` and `take()` return an object implementing the Arrow PyCapsule stream protocol
(`__arrow_c_stream__`), so any Arrow consumer (pyarrow, polars, duckdb) imports the batches
zero-copy. The C++ library is reached through its C API (libonecopy.so) with ctypes.
"""

from onecopy._native import (Batches, Client, OnecopyError, ScanCursor, VortexFile, expand, open, reload_settings,
                             shard_units, version)
from onecopy.expr import Expr, col, lit

__all__ = ["Batches", "Client", "Expr", "OnecopyError", "ScanCursor", "VortexFile", "col", "expand", "lit", "open",
           "reload_settings", "shard_units", "version"]
__version__ = version()
