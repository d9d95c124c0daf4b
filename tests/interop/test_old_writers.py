# SPDX-License-Identifier: Apache-2.0
"""Files written by older vortex-data releases read correctly: the short run of the older-writer
matrix (scripts/writer_matrix.sh runs every release from 0.36 on).

Each release gets a venv under build/old-writers (its wheel from the package index on first use,
about 10 s a release afterwards) and writes the small interop corpus with its default writer and,
from 0.54 on, its compact one; every column onecopy reads must equal the pyarrow table. A column
the release cannot write is left out of its file (legacy_writer.py); one it writes lossily, which
onecopy reads as the release itself does, and one onecopy refuses as the pinned vortex-data does
(0.36's nullable structs without their validity, issue 19) do not fail the test.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import old_writers

CACHE = Path(__file__).resolve().parents[2] / "build" / "old-writers"

# One from each stretch: 0.36.1 (the oldest line; its nullable structs lack their validity), 0.56.0
# (a 0.5x compact writer: pco, substrait.gen), 0.73.0 and 0.86.1 (later compact writers).
# 0.71.0 is left out: its writer hangs on list columns (the matrix records that).
RELEASES = ["0.36.1", "0.56.0", "0.73.0", "0.86.1"]


@pytest.fixture(scope="module")
def tables() -> Path:
    return old_writers.write_tables(CACHE / "tables")


@pytest.mark.parametrize("release", RELEASES)
def test_every_column_equals_pyarrow(tables: Path, release: str):
    _, res = old_writers.run_release(release, tables, CACHE)
    assert res.files >= 16 and res.checked > 100, f"{release}: {res.files} files, {res.checked} columns"
    assert not res.failures, f"{release}: {len(res.failures)} of {res.checked} columns fail:\n" + \
        "\n".join(str(f) for f in res.failures)
    # The refusals the oracle shares are issue 19's structs only, never a new way to pass.
    assert all("validity" in f.message for f in res.refused), "\n".join(str(f) for f in res.refused)
