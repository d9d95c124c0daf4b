# SPDX-License-Identifier: Apache-2.0
"""One process of test_rados.py: seeded filters and projections over `rados://` files, each
scan's table equal to pyarrow's over the ground truth.

    python rados_scan_check.py SEED COUNT URI ARROW [URI ARROW ...]

The knobs come from the environment this process starts with (onecopy reads them once), so the
test runs it once with ONECOPY_RADOS_PUSHDOWN=on (every scan in the OSDs) and once with off
(every scan client-side through librados reads). Prints one line per file and exits 1 on the
first difference, naming the file, the SQL and the projection.
"""
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import pyarrow as pa  # noqa: E402
import pytest  # noqa: E402

import onecopy  # noqa: E402
from test_filter_take import assert_tables_equal, check_filters, read_arrow  # noqa: E402


def check(uri: str, table: pa.Table, seed: int, count: int) -> int:
    # The whole file first: a scan without a filter or projection is pushed down only with
    # ONECOPY_RADOS_PUSHDOWN=on.
    assert_tables_equal(pa.table(onecopy.open(uri).scan()), table, f"{uri} (whole file)")
    try:
        check_filters(uri, table, seed, count)
    except pytest.skip.Exception:  # no column a filter can name (the empty table)
        return 1
    return count + 1


def main(argv) -> int:
    seed, count, pairs = int(argv[0]), int(argv[1]), argv[2:]
    for k in range(0, len(pairs), 2):
        uri, arrow = pairs[k], Path(pairs[k + 1])
        n = check(uri, read_arrow(arrow), seed + k, count)
        print(f"{uri}: {n} scans equal pyarrow", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
