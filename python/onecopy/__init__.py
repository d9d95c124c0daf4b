# SPDX-License-Identifier: Apache-2.0
"""onecopy: read Vortex files into Arrow without copies.

    import onecopy, pyarrow as pa
    f = onecopy.open("data.vortex")
    f.schema, f.row_count
    table = pa.table(f.scan(columns=["a", "b"], batch_rows=65536))
    hits = pa.table(f.scan(filter=(onecopy.col("a") > 10) & onecopy.col("b").is_not_null()))
    some = pa.table(f.take([17, 3, 17]))

    ds = onecopy.dataset("s3://bucket/train/")  # a directory, prefix, glob or list: one table
    ds.files, ds.schema, ds.row_count, ds.count(filter="a > 10")
    table = ds.scan(columns=["a"], filter="a > 10").read_all()  # each file pruned by its statistics
    rows = pa.table(ds.take([0, 123_456, 7]))  # row numbers across the files, in their order
    loader_data = ds.to_torch(batch_rows=256)  # onecopy.torch.Dataset over the same files

`open` of a directory, an s3:// prefix or a glob gives the same onecopy.Dataset.

`scan()` and `take()` return an object implementing the Arrow PyCapsule stream protocol
(`__arrow_c_stream__`), so any Arrow consumer (pyarrow, polars, duckdb) imports the batches
zero-copy. The C++ library is reached through its C API (libonecopy.so) with ctypes.

Where onecopyd serves the machine (its socket in $ONECOPY_SOCKET or at /run/onecopy/onecopyd.sock),
`open` and `dataset` read through it, with the daemon's credentials; `daemon=False` or
`ONECOPY_SOCKET=` (empty) reads in this process. A daemon that should answer and does not is an
error, never a silent read in this process (onecopy._daemon).
"""

from onecopy._daemon import daemon_socket, dataset, open
from onecopy._dataset import Dataset
from onecopy._lib import OnecopyError, reload_settings, version
from onecopy._native import Batches, Client, ScanCursor, VortexFile, expand, shard_units
from onecopy._remote_file import RemoteFile
from onecopy.expr import Expr, col, lit

__all__ = ["Batches", "Client", "Dataset", "Expr", "OnecopyError", "RemoteFile", "ScanCursor", "VortexFile", "col",
           "daemon_socket", "dataset", "expand", "lit", "open", "reload_settings", "shard_units", "version"]
__version__ = version()
