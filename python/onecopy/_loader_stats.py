# SPDX-License-Identifier: Apache-2.0
"""Per-stage timing of a dataset (`ds.stats()`), so that a user can tell which stage holds
training up: the scans' own stages (format/scan_profile.hpp: storage, decode, copy, the scan
waiting on its consumer, the consumer waiting on the scan), and the loader's: the loop waiting
for a shuffle group to be read, assembling batches (shuffle, take, tensors), and the training
loop's own time between two items.

Totals live in shared memory, so that DataLoader worker processes add theirs to the dataset the
training loop asks; the latest scans are listed as the process that read them saw them."""

from __future__ import annotations

import collections
import multiprocessing
import time

from onecopy._scan import STAGES, bottleneck

# The loader's own stages, in seconds, and its item count.
LOADER = ("waiting_for_data_s", "assemble_s", "training_s", "items")
_SCAN_COUNTS = ("rows", "batches", "bytes_read")
_FIELDS = ("scans",) + _SCAN_COUNTS + tuple(f"{s}_s" for s in STAGES) + LOADER
_RECENT = 8  # scans listed one by one


class LoaderStats:
    def __init__(self):
        self._totals = multiprocessing.Array("d", len(_FIELDS))
        self._recent: collections.deque = collections.deque(maxlen=_RECENT)

    def __getstate__(self) -> dict:
        # A worker lists its own latest scans; the totals are shared.
        return {"_totals": self._totals, "_recent": collections.deque(maxlen=_RECENT)}

    def add_scan(self, url: str, stats: dict) -> None:
        """Counts one finished scan (ScanCursor.stats, Scan.stats) of @url."""
        self._recent.append({"url": url, **stats})
        self.add({"scans": 1, **{k: stats[k] for k in _FIELDS if k in stats}})

    def add(self, values: dict) -> None:
        with self._totals.get_lock():
            for key, value in values.items():
                self._totals[_FIELDS.index(key)] += value

    def snapshot(self) -> dict:
        with self._totals.get_lock():
            values = dict(zip(_FIELDS, self._totals[:]))
        return _snapshot(values, list(self._recent))


def _snapshot(values: dict, recent: list) -> dict:
    """ds.stats() from the totals @values (_FIELDS) and the latest scans @recent."""
    out = {key: values[key] for key in _FIELDS if key not in LOADER}
    for key in ("scans",) + _SCAN_COUNTS:
        out[key] = int(out[key])
    out["bottleneck"] = bottleneck(out)
    loader = {key: values[key] for key in LOADER}
    loader["items"] = int(loader["items"])
    producing = loader["waiting_for_data_s"] + loader["assemble_s"]
    # Which side the training loop waits on: the data (reading, assembling) or itself.
    loader["bound_by"] = ("none" if not loader["items"] else
                          "data" if producing > loader["training_s"] else "training")
    out["loader"] = loader
    out["recent_scans"] = recent[-_RECENT:]
    return out


def merged_snapshots(parts: list[dict]) -> dict:
    """One snapshot of several datasets' (a Mix's): every total summed, the latest scans of each."""
    values = dict.fromkeys(_FIELDS, 0.0)
    for part in parts:
        for key in _FIELDS:
            values[key] += part["loader"][key] if key in LOADER else part[key]
    return _snapshot(values, [s for p in parts for s in p["recent_scans"]])


class ItemTimer:
    """Times one iteration of a dataset's items: call `waited()` when a group's rows arrive,
    `made()` just before yielding an item and `resumed()` just after; `flush()` adds what it
    timed to the totals (per group, and when iteration ends)."""

    def __init__(self, stats: LoaderStats):
        self._stats = stats
        self._t = time.perf_counter()
        self._pending = dict.fromkeys(LOADER, 0.0)

    def _lap(self, key: str) -> None:
        now = time.perf_counter()
        self._pending[key] += now - self._t
        self._t = now

    def waited(self) -> None:
        self._lap("waiting_for_data_s")

    def made(self) -> None:
        self._lap("assemble_s")
        self._pending["items"] += 1

    def resumed(self) -> None:
        self._lap("training_s")

    def flush(self) -> None:
        self._stats.add(self._pending)
        self._pending = dict.fromkeys(LOADER, 0.0)

