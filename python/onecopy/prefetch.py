# SPDX-License-Identifier: Apache-2.0
"""onecopy prefetch: warms the node's byte cache for a coming job.

    python -m onecopy.prefetch URI ... [--columns a,b] [--filter EXPR] [--socket PATH | --in-process]
                                       [--parallel N]

Scans each file URI names (a file, an s3:// prefix or glob) as the job will, with its columns and
filter, and drops the batches: the bytes those scans read stay in onecopyd's cache (memory, and
cache_dir on disk), shared by every rank and job on the node, so the job's first epoch reads them
from there. --in-process warms this process's cache instead, which helps the next process only
through a disk tier (cache_dir). A filter prunes as the job's would: only the bytes it needs are
fetched.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import sys
import time
from typing import Optional, Sequence, Union

import pyarrow as pa

import onecopy
from onecopy._native import Client
from onecopy._torch_plan import expand_urls


def prefetch(uris: Sequence[str], columns: Optional[Sequence[str]] = None, filter: Optional[str] = None,
             socket: Union[str, bool, None] = None, parallel: int = 8) -> dict:
    """Scans every file of @uris with @columns and @filter, dropping the batches; returns
    {"files", "rows", "seconds"}. @socket as onecopy.open's `daemon` (False: in this process)."""
    sock = None if socket is False else onecopy.daemon_socket(socket)
    urls, _ = expand_urls(list(uris), sock)

    def one(url: str) -> int:
        f = onecopy.open(url, daemon=sock if sock else False)
        reader = pa.RecordBatchReader.from_stream(f.scan(columns=columns, filter=filter))
        return sum(batch.num_rows for batch in reader)

    start = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max(1, parallel)) as pool:
        rows = sum(pool.map(one, urls))
    return {"files": len(urls), "rows": rows, "seconds": time.monotonic() - start,
            "socket": sock}


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="onecopy prefetch", description=__doc__.split("\n\n")[0])
    ap.add_argument("uris", nargs="+", metavar="URI")
    ap.add_argument("--columns", help="comma-separated columns the job reads (default: all)")
    ap.add_argument("--filter", help="the job's filter (SQL WHERE syntax)")
    ap.add_argument("--parallel", type=int, default=8, help="files scanned at once (default 8)")
    where = ap.add_mutually_exclusive_group()
    where.add_argument("--socket", help="onecopyd's socket (default: $ONECOPY_SOCKET, else the system one)")
    where.add_argument("--in-process", action="store_true", help="warm this process's cache (cache_dir)")
    a = ap.parse_args(argv)
    try:
        r = prefetch(a.uris, a.columns.split(",") if a.columns else None, a.filter,
                     False if a.in_process else a.socket, a.parallel)
    except (ValueError, OSError, onecopy.OnecopyError) as e:
        print(f"onecopy prefetch: {e}", file=sys.stderr)
        return 1
    where = f"onecopyd at {r['socket']}" if r["socket"] else "this process"
    print(f"prefetched {r['files']} files ({r['rows']} rows) into {where}'s cache in {r['seconds']:.1f} s")
    if r["socket"]:
        s = Client(r["socket"]).status()
        print(f"cache: {s['cache_memory_bytes']} bytes in memory, {s['cache_disk_bytes']} on disk")
    return 0


if __name__ == "__main__":
    sys.exit(main())
