# SPDX-License-Identifier: Apache-2.0
"""onecopy index: writes a dataset's manifest, so that planning a read of it costs one listing and
one GET whatever its file count.

    python -m onecopy.index s3://BUCKET/PREFIX/ [--socket PATH | --in-process]

The manifest is the Vortex file PREFIX/_onecopy/manifest.vortex (written by vortex-data): per
file under the prefix its key (relative to the prefix), ETag, size, row count, and its footer's
bytes with their offset and CRC-32C (net/dataset.hpp lists the columns). onecopy reads it to plan,
never as the truth: a file missing from it, or listed with another ETag or size, is planned from
its own footer (counted as a fallback in `onecopy status`), so a stale manifest costs time, never
rows. Re-run it after the files change; `onecopy convert --to s3://...` runs it at its end.

The footers are gathered by onecopyd (with its credentials, under this user's grants) when one
serves this process, else in this process with its own; the manifest is uploaded with this
process's AWS credentials (pyarrow's S3 filesystem), which must be allowed to write the prefix.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from typing import Optional, Sequence, Union

import pyarrow as pa

import onecopy
from onecopy._native import Client, crc32c, dataset_index
from onecopy._s3fs import s3_filesystem

MANIFEST = "_onecopy/manifest.vortex"


def manifest_table(prefix: str, index: dict) -> pa.Table:
    """The manifest's rows for the files of @index (Client.dataset_index with footers) under @prefix."""
    files = index["files"]
    for f in files:
        if not f["uri"].startswith(prefix):
            raise ValueError(f"{f['uri']} is not under {prefix}")
    return pa.table({
        "key": pa.array([f["uri"][len(prefix):] for f in files], pa.utf8()),
        "etag": pa.array([f["etag"] for f in files], pa.utf8()),
        "size": pa.array([f["size"] for f in files], pa.uint64()),
        "rows": pa.array([f["rows"] for f in files], pa.uint64()),
        "footer_offset": pa.array([f["footer_offset"] for f in files], pa.uint64()),
        "footer": pa.array([f["footer"] for f in files], pa.binary()),
        "footer_crc32c": pa.array([crc32c(f["footer"]) for f in files], pa.uint32()),
    })


def index(prefix: str, socket: Union[str, bool, None] = None) -> dict:
    """Writes @prefix's manifest; returns {"manifest": its URI, "files": N, "rows": total}.
    @socket: the daemon's socket, None for the usual choice (onecopy.daemon_socket), False to
    gather the footers in this process."""
    import pyarrow.fs as pafs
    import vortex

    if not prefix.startswith("s3://") or not prefix.endswith("/"):
        raise ValueError(f"onecopy index takes an s3:// prefix ending in '/', not {prefix!r}")
    sock = None if socket is False else onecopy.daemon_socket(socket)
    got = Client(sock).dataset_index(prefix, footers=True) if sock else dataset_index(prefix, footers=True)
    table = manifest_table(prefix, got)
    fs = s3_filesystem()
    target = (prefix + MANIFEST)[len("s3://"):]
    with tempfile.TemporaryDirectory(prefix="onecopy-index-") as tmp:
        local = os.path.join(tmp, "manifest.vortex")
        vortex.io.write(table, local)
        # One PUT: the manifest appears whole or not at all.
        pafs.copy_files(local, target, source_filesystem=pafs.LocalFileSystem(), destination_filesystem=fs)
    return {"manifest": prefix + MANIFEST, "files": table.num_rows, "rows": sum(f["rows"] for f in got["files"])}


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="onecopy index", description=__doc__.split("\n\n")[0])
    ap.add_argument("prefix", metavar="s3://BUCKET/PREFIX/")
    where = ap.add_mutually_exclusive_group()
    where.add_argument("--socket", help="onecopyd's socket (default: $ONECOPY_SOCKET, else the system one)")
    where.add_argument("--in-process", action="store_true",
                       help="read the footers in this process, with its credentials")
    a = ap.parse_args(argv)
    try:
        r = index(a.prefix, False if a.in_process else a.socket)
    except (ValueError, ImportError, OSError, onecopy.OnecopyError, pa.ArrowException) as e:
        print(f"onecopy index: {e}", file=sys.stderr)
        return 1
    print(f"{r['manifest']}: {r['files']} files, {r['rows']} rows")
    return 0


if __name__ == "__main__":
    sys.exit(main())
