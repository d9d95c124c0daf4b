# SPDX-License-Identifier: Apache-2.0
"""Writes the small Vortex files that seed the fuzzers and the corrupt-file tests
(tests/fuzz/seeds/open_scan/*.vortex), and the message sequences that seed the daemon's
session fuzzer (tests/fuzz/seeds/daemon_session/, daemon/fuzz_session.hpp for the record
format). Run with the project venv's Python; the output is checked in so that tests need no
writer (the sequences are built by flatc from daemon/protocol.fbs)."""

import json
import struct
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import vortex as vx

OUT = Path(__file__).resolve().parent / "seeds" / "open_scan"
SESSIONS = Path(__file__).resolve().parent / "seeds" / "daemon_session"
SCHEMA = Path(__file__).resolve().parents[2] / "daemon" / "protocol.fbs"


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    n = 3000
    mixed = pa.table({
        "id": pa.array(np.arange(n, dtype=np.int64)),
        "small": pa.array(rng.integers(0, 100, n, dtype=np.int32), mask=rng.random(n) < 0.1),
        "price": pa.array(np.round(rng.random(n) * 100, 2)),
        "city": pa.array([["Oslo", "Lima", "Pune"][i % 3] for i in range(n)]),
        "flag": pa.array(rng.random(n) < 0.5),
        "tags": pa.array([[int(x) for x in rng.integers(0, 9, i % 4)] for i in range(n)], type=pa.list_(pa.int32())),
        "ts": pa.array(1_700_000_000 + np.arange(n), type=pa.timestamp("s", tz="UTC")),
    })
    vx.io.write(mixed, str(OUT / "mixed.vortex"))
    vx.io.write(pa.table({"x": pa.array([1, 2, 3], type=pa.int8())}), str(OUT / "tiny.vortex"))
    vx.io.VortexWriteOptions.compact().write(pa.table({"s": pa.array([f"row {i}" for i in range(500)])}),
                                             str(OUT / "compact_strings.vortex"))
    # Numbers through the compact writer: vortex.pco arrays (two pages a column, some nulls).
    m = 9000
    walk = np.cumsum(rng.integers(-50, 50, m))
    vx.io.VortexWriteOptions.compact().write(pa.table({
        "walk": pa.array(walk.astype(np.int64), mask=rng.random(m) < 0.05),
        "sine": pa.array((np.sin(np.arange(m) / 40) * 20000).astype(np.int16)),
        "x": pa.array(rng.standard_normal(m), mask=rng.random(m) < 0.2),
        "u": pa.array(rng.geometric(0.01, m).astype(np.uint32)),
    }), str(OUT / "compact_numbers.vortex"))
    write_lists()
    write_zoned()
    write_sessions()


def write_lists():
    """Lists both ways vortex-data writes them: vortex.list, and vortex.listview from a pyarrow
    list_view column (views back to back, some null), for the scan and take fuzzers."""
    rng = np.random.default_rng(2)
    n = 2000
    lengths = rng.integers(0, 6, n).astype(np.int32)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    values = pa.array(rng.integers(0, 1000, offsets[-1], dtype=np.int32))
    mask = pa.array(rng.random(n) < 0.1)
    vx.io.write(pa.table({
        "list": pa.ListArray.from_arrays(pa.array(offsets), values, mask=mask),
        "view": pa.ListViewArray.from_arrays(pa.array(offsets[:-1]), pa.array(lengths), values, mask=mask),
    }), str(OUT / "lists.vortex"))


def write_zoned():
    """Sorted columns over seven 8192-row zones, for the pruning tests: strings whose shared
    prefix is longer than the 64-byte bound, floats with NaN and nulls, nullable ints."""
    n = 50_000
    ids = np.arange(n, dtype=np.int64)
    score = ids / 10.0
    score[ids % 97 == 0] = np.nan
    vx.io.write(pa.table({
        "id": pa.array(ids),
        "grp": pa.array((ids // 1000).astype(np.int32), mask=(ids >= 40_000) & (ids < 41_000)),
        "name": pa.array(["k" * 70 + f"{i // 1000:04d}" for i in range(n)]),
        "score": pa.array(score, mask=ids % 89 == 0),
        "flag": pa.array(ids < 8192),
        "day": pa.array((ids // 500).astype(np.int32), type=pa.date32()),
    }), str(OUT / "zoned.vortex"))


def frame(body_type: str, body: dict) -> bytes:
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "m.json"
        src.write_text(json.dumps({"body_type": body_type, "body": body}))
        subprocess.run(["flatc", "-b", "-o", tmp, str(SCHEMA), str(src)], check=True)
        data = (Path(tmp) / "m.bin").read_bytes()
    return struct.pack("<II", 2, len(data)) + data


def record(message: bytes, flags: int = 0) -> bytes:
    """One record of a session seed: u8 flags (1 attach the file, 2 release all, 4 reconnect),
    u16 length, the packet."""
    return struct.pack("<BH", flags, len(message)) + message


def write_sessions():
    SESSIONS.mkdir(parents=True, exist_ok=True)
    hello = record(frame("Hello", {"version": 2}))
    open_fd = record(frame("Open", {"request": 1, "uri": "tiny.vortex", "unit_rows": 2}), flags=1)
    seeds = {
        "status": [hello, record(frame("StatusRequest", {}))],
        "scan": [hello, open_fd, record(frame("Scan", {"request": 2, "file": 1, "batch_rows": 1}), flags=2),
                 record(frame("StatusRequest", {})), record(frame("Close", {"file": 1}))],
        "sharded": [hello, open_fd, record(frame("Scan", {"request": 3, "file": 1, "sharded": True,
                                                          "world_size": 2, "rank": 1, "unit_rows": 1,
                                                          "filter": "x > 1", "columns": ["x"]})),
                    record(frame("Cancel", {"scan": 4}), flags=2), record(frame("Close", {"file": 1}), flags=4),
                    hello, record(frame("StatusRequest", {}))],
        "ranges": [hello, open_fd, record(frame("Scan", {"request": 2, "file": 1, "ranges": [0, 2, 1, 3]}), flags=2)],
        "take": [hello, open_fd, record(frame("Scan", {"request": 2, "file": 1, "selection": "Take",
                                                       "take_rows": [2, 0, 2, 9], "batch_rows": 1}), flags=2)],
        "refused": [hello, record(frame("Open", {"request": 1, "uri": "/etc/shadow"})),
                    record(frame("Open", {"request": 2, "uri": "s3://bucket/key.vortex"})),
                    record(frame("List", {"request": 3, "pattern": "/etc/*"})),
                    record(frame("Cancel", {"scan": 0, "request": 1})),
                    record(frame("Release", {"lease": 7}))],
        "parts": [hello, record(frame("Part", {"data": list(frame("StatusRequest", {})), "more": False}))],
    }
    for name, records in seeds.items():
        (SESSIONS / name).write_bytes(b"".join(records))


if __name__ == "__main__":
    main()
