#!/usr/bin/env python3
"""Data steps of scripts/gpu_check.sh on the device machine.

  gpu_check_data.py write LINEITEM.parquet LINEITEM.vortex
      writes the Parquet file as Vortex with vortex-data's default options (the writer whose
      files onecopy reads; as scripts/bench_format.py does).
  gpu_check_data.py parquet LINEITEM.parquet COLUMNS.txt
      times pyarrow decoding the columns named in COLUMNS.txt (one a line: the ones the GPU
      bench fused) from Parquet on all cores, best of 5 after a warm-up, and prints one table row.
"""
import os
import sys
import time


def write(parquet: str, vortex: str) -> None:
    import pyarrow.parquet as pq
    import vortex as vx

    table = pq.read_table(parquet)
    tmp = vortex + ".tmp"
    vx.io.VortexWriteOptions.default().write(table, tmp)
    os.replace(tmp, vortex)


def parquet(path: str, columns_file: str) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    with open(columns_file) as f:
        columns = [line.strip() for line in f if line.strip()]
    if not columns:
        print("pyarrow: no fused columns to compare")
        return
    read = lambda: pq.read_table(path, columns=columns, use_threads=True)  # noqa: E731
    table = read()
    best = float("inf")
    for _ in range(5):
        t = time.perf_counter()
        read()
        best = min(best, time.perf_counter() - t)
    decoded = sum(c.nbytes for c in table.columns)
    label = f"CPU: pyarrow {pa.__version__} Parquet, {pa.cpu_count()} threads"
    print(f"{label:<44} {best * 1e3:10.2f} {decoded / best / 1e9:12.1f}   ({', '.join(columns)})")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "write":
        write(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 4 and sys.argv[1] == "parquet":
        parquet(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)
