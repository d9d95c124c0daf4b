# SPDX-License-Identifier: Apache-2.0
"""Writes Arrow IPC tables as Vortex files with whichever `vortex-data` release is importable.

Runs inside a release's own environment (tests/interop/old_writers.py builds them), so it imports
nothing from this repository and nothing newer than pyarrow and that release's `vortex`:

    python legacy_writer.py ARROW_DIR OUT_DIR
    python legacy_writer.py --column FILE COLUMN OUT.arrow   (what the release reads of a column)

For every ARROW_DIR/<case>.arrow it writes OUT_DIR/<case>.<writer>.vortex with the release's
default writer and, from 0.54 on, its compact one, then OUT_DIR/writer.json: the release, the
API each writer went through, and what the release could not write. The Python API moved:

    0.36-0.53  vortex.io.write(vx.array(table), path)       default only
    0.54-0.58  VortexWriteOptions.{default,compact}().write_path(table, path)
    0.59-      VortexWriteOptions.{default,compact}().write(table, path)

(the table as it is, as corpus.py passes it to 0.93, or as vx.array(table) where a release's
write raises TypeError on it). The tables are read with 64-byte aligned buffers: 0.5x releases
panic on a decimal buffer at an 8-byte offset, on a writer thread, leaving an empty file behind.

A table the release rejects is written again without the columns it rejects one by one (recorded
under "dropped"); a case it cannot write at all, or writes short, is recorded under "failed".
Neither is an error of the reader under test; nor is a file the release's own reader finds short
(removed, under "failed"). writer.json is saved after every file: a
write that makes no progress for HANG_SECONDS ends the process (exit 1), and a rerun resumes after
that file, recorded under "failed".
"""

from __future__ import annotations

import faulthandler
import importlib.metadata
import json
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.ipc
import vortex as vx
import vortex.io


# What a release's bindings raise: pyo3 turns a Rust panic ("not yet supported") into
# pyo3_runtime.PanicException, a BaseException that is not an Exception.
class _Stop(Exception):
    pass


def _guard(call):
    """Runs call(); any failure but an interrupt comes back as _Stop("Type: message")."""
    try:
        return call()
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as e:  # noqa: BLE001
        raise _Stop(f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}") from None


HANG_SECONDS = 30  # a case takes a few seconds at most on 2 busy cores
_ALIGNED = pa.ipc.IpcReadOptions(ensure_alignment=pa.ipc.Alignment.At64Byte)


def _writers():
    """{writer name: (api description, write(table, path))} for this release."""
    options = getattr(vortex.io, "VortexWriteOptions", None)
    if options is None:
        return {"default": ("vortex.io.write(vx.array(table))", lambda t, p: vortex.io.write(vx.array(t), p))}
    out = {}
    for name in ("default", "compact"):
        make = getattr(options, name, None)
        if make is None:
            continue
        method = "write" if hasattr(make(), "write") else "write_path"

        def write(t, p, make=make, method=method):
            w = getattr(make(), method)
            try:
                w(t, p)
            except TypeError:  # releases whose write takes only Vortex arrays or iterators
                w(vx.array(t), p)

        out[name] = (f"VortexWriteOptions.{name}().{method}", write)
    return out


def _write_table(write, table: pa.Table, path: Path) -> dict:
    """Writes the table, dropping the columns this release rejects; returns {column: error}."""
    try:
        _guard(lambda: write(table, str(path)))
        return {}
    except _Stop as whole:
        dropped = {}
        for name in table.column_names:
            try:
                _guard(lambda: write(table.select([name]), str(path)))
            except _Stop as e:
                dropped[name] = str(e)
        if not dropped or len(dropped) == table.num_columns:
            path.unlink(missing_ok=True)
            raise whole
        _guard(lambda: write(table.drop_columns(list(dropped)), str(path)))
        return dropped


def _count_rows(path: Path, rows: int) -> None:
    """Checks with the release's own reader that `path` holds every row."""
    n = len(vx.open(str(path)))
    if n != rows:  # a panic on a writer thread can leave a short file and no exception
        path.unlink()
        raise ValueError(f"the file holds {n} rows of {rows}; removed")


def read_column(path: Path, column: str, out: Path) -> None:
    """Writes what the release itself reads of one column of `path` to `out` (Arrow IPC): the
    checker asks for it where onecopy's column differs, to tell a writer's loss from a reader's bug."""
    got = vx.open(str(path)).to_arrow([column])
    got = (got.read_all() if hasattr(got, "read_all") else got).combine_chunks()
    with pa.OSFile(str(out), "wb") as sink, pa.ipc.new_file(sink, got.schema) as w:
        w.write_table(got)


def main(arrow_dir: Path, out_dir: Path) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    writers = _writers()
    saved = out_dir / "writer.json"
    manifest = {"release": importlib.metadata.version("vortex-data"),
                "writers": {name: api for name, (api, _) in writers.items()}, "dropped": {}, "failed": {},
                "done": [], "current": None}
    if saved.exists():  # a rerun after a hung write: resume, that file given up
        manifest = json.loads(saved.read_text())
        if manifest["current"]:
            manifest["failed"][manifest["current"]] = f"hung: no progress in {HANG_SECONDS} s, killed"
            Path(out_dir / manifest["current"]).unlink(missing_ok=True)

    def save(current):
        manifest["current"] = current
        saved.write_text(json.dumps(manifest, indent=1, sort_keys=True))

    for arrow in sorted(arrow_dir.glob("*.arrow")):
        with pa.memory_map(str(arrow)) as src:
            table = pa.ipc.open_file(src, options=_ALIGNED).read_all()
        for name, (_, write) in writers.items():
            path = out_dir / f"{arrow.stem}.{name}.vortex"
            if path.name in manifest["done"] or path.name in manifest["failed"]:
                continue
            save(path.name)
            # A release's writer can deadlock (0.71.0 does on nested_all_nulls): the watchdog
            # thread ends the process, and the caller runs it again to resume after this file.
            faulthandler.dump_traceback_later(HANG_SECONDS, exit=True)
            try:
                dropped = _write_table(write, table, path)
            except _Stop as e:
                manifest["failed"][path.name] = str(e)
            else:
                if dropped:
                    manifest["dropped"][path.name] = dropped
                try:
                    _guard(lambda: _count_rows(path, table.num_rows))
                except _Stop as e:
                    manifest["failed"][path.name] = str(e)
            faulthandler.cancel_dump_traceback_later()
            manifest["done"].append(path.name)
            save(None)


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--column":
        read_column(Path(sys.argv[2]), sys.argv[3], Path(sys.argv[4]))
    elif len(sys.argv) == 3:
        main(Path(sys.argv[1]), Path(sys.argv[2]))
    else:
        sys.exit(__doc__)
