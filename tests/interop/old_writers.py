# SPDX-License-Identifier: Apache-2.0
"""The older-writer matrix: the interop corpus written by older `vortex-data` releases, read by onecopy.

Three steps, each usable alone:

- `release_env(version, cache)`: a throw-away venv holding that release only. It has no pip and no
  system site-packages; a .pth file adds this repository's .venv site-packages behind its own, so
  pyarrow 21 and numpy 1.26 (numpy < 2, which Debian's torch needs) come from there and every
  release writes the same tables. Every release from 0.36 asks for pyarrow >= 17, substrait >= 0.23
  and, from 0.57, typing-extensions, all of which .venv has; 0.47 to 0.58 import `substrait.gen`,
  which the substrait of .venv no longer has, and get substrait 0.24.2 in their own site-packages.
- `write_release(version, tables, out, cache)`: that release writes every `<case>.arrow` of `tables`
  (the small corpus of corpus.py, written once by `write_tables`) through legacy_writer.py.
- `check_release(out)`: onecopy reads every column of every file, compared with the Arrow table by
  test_interop's `normalize` and `same`.

Run as a script for a table over releases (scripts/writer_matrix.sh runs every release):

    python tests/interop/old_writers.py [--cache DIR] 0.36.0 0.56.0 ...
"""

from __future__ import annotations

import argparse
import dataclasses
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import corpus as corpus_mod  # noqa: E402
import pyarrow as pa  # noqa: E402

import onecopy  # noqa: E402
import vortex as vx  # noqa: E402 - the pinned release, the oracle of test_interop
from test_interop import column_or_error, expected_table, normalize, same  # noqa: E402

# A substrait that still has the `substrait.gen` package vortex-data 0.47 to 0.58 import.
SUBSTRAIT_GEN = "substrait==0.24.2"


def _wheel(spec: str, cache: Path) -> Path:
    """The wheel of `spec` ("name==version") for this machine, downloaded into cache/wheels once."""
    name, version = spec.split("==")
    wheels = cache / "wheels"
    pattern = f"{name.replace('-', '_')}-{version}-*.whl"
    if not any(wheels.glob(pattern)):
        # --only-binary: a release without a wheel for this machine is reported, never built.
        _pip("download", "--no-deps", "--only-binary", ":all:", "--dest", str(wheels), spec)
    return sorted(wheels.glob(pattern))[-1]


def _pip(*args: str) -> None:
    """Runs this interpreter's pip; the message of a failure is pip's last lines."""
    r = subprocess.run([sys.executable, "-m", "pip", "--disable-pip-version-check", "-q", *args],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"pip {' '.join(args)}: " + (r.stderr or r.stdout).strip().splitlines()[-1])


def _import_error(python: Path) -> str | None:
    r = subprocess.run([str(python), "-c", "import vortex, vortex.io"], capture_output=True, text=True)
    return None if r.returncode == 0 else (r.stderr.strip().splitlines() or ["?"])[-1]


def release_env(version: str, cache: Path) -> Path:
    """The python of a venv holding `vortex-data==version`, built under `cache` on first use."""
    env = cache / f"venv-{version}"
    python = env / "bin" / "python"
    if (env / "ready").exists():
        return python
    shutil.rmtree(env, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True)
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                               check=True, capture_output=True, text=True).stdout.strip())
    (site / "onecopy-base.pth").write_text(f"import site; site.addsitedir({sysconfig.get_path('purelib')!r})\n")
    _pip("install", "--no-deps", "--no-compile", "--target", str(site), str(_wheel(f"vortex-data=={version}", cache)))
    err = _import_error(python)
    if err and "substrait.gen" in err:
        _pip("install", "--no-deps", "--no-compile", "--target", str(site), str(_wheel(SUBSTRAIT_GEN, cache)))
        err = _import_error(python)
    if err:
        raise RuntimeError(f"import vortex: {err}")
    (env / "ready").write_text(version + "\n")
    return python


def write_tables(dir: Path) -> Path:
    """The small corpus's tables as `<case>.arrow` (no Vortex files), written once."""
    stamp = dir / "tables.json"
    want = {"version": corpus_mod.CORPUS_VERSION}
    dir.mkdir(parents=True, exist_ok=True)
    with open(dir / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not stamp.exists() or json.loads(stamp.read_text()) != want:
            for name, table in corpus_mod.cases(large=False):
                corpus_mod.write_case(dir, name, table, writers={})
            stamp.write_text(json.dumps(want))
    return dir


def write_release(version: str, tables: Path, out: Path, cache: Path) -> dict:
    """Writes every table with `version`'s writers into `out`; returns legacy_writer's manifest."""
    manifest, stamp = out / "writer.json", out / "stamp.json"
    want = {"release": version, "tables": json.loads((tables / "tables.json").read_text()),
            "writer": hashlib.sha256((HERE / "legacy_writer.py").read_bytes()).hexdigest()}
    if stamp.exists() and json.loads(stamp.read_text()) == want:
        return json.loads(manifest.read_text())
    python = release_env(version, cache)
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    for arrow in tables.glob("*.arrow"):  # the checker finds the expected tables next to the files
        os.link(arrow, out / arrow.name)
    for _ in range(2 * len(list(tables.glob("*.arrow"))) + 1):
        r = subprocess.run([str(python), str(HERE / "legacy_writer.py"), str(tables), str(out)],
                           capture_output=True, text=True)
        # A hung write ends the writer with writer.json naming it; the next run resumes after it.
        if r.returncode == 0 or not manifest.exists() or not json.loads(manifest.read_text())["current"]:
            break
    if r.returncode != 0:
        raise RuntimeError(f"legacy_writer.py under {version}: " + (r.stderr.strip().splitlines() or ["?"])[-1])
    stamp.write_text(json.dumps(want))
    return json.loads(manifest.read_text())


@dataclasses.dataclass
class Failure:
    file: str
    column: str
    kind: str  # an onecopy error class ("unsupported", "corrupt", ...) or "differs"
    message: str

    def __str__(self):
        return f"{self.file}:{self.column}: {self.kind}: {self.message}"


@dataclasses.dataclass
class Result:
    files: int = 0
    checked: int = 0
    equal: int = 0
    lossy: list[Failure] = dataclasses.field(default_factory=list)  # the writer's loss, not onecopy's
    refused: list[Failure] = dataclasses.field(default_factory=list)  # errors the oracle raises too
    failures: list[Failure] = dataclasses.field(default_factory=list)


def _first_difference(a: pa.Array, e: pa.Array) -> int:
    if len(a) != len(e):
        return 0
    return next((i for i in range(len(e)) if not same(a.slice(i, 1), e.slice(i, 1))), 0)


def _release_reads(path: Path, name: str, got: pa.ChunkedArray, python: Path | None) -> bool:
    """Whether the release that wrote `path` (its venv's `python`) reads column `name` back as
    onecopy did: then the file holds what onecopy read, and the loss is the writer's."""
    if python is None:
        return False
    back = path.with_name(f"{path.name}.{name}.readback.arrow")
    try:
        r = subprocess.run([str(python), str(HERE / "legacy_writer.py"), "--column", str(path), name, str(back)],
                           capture_output=True)
        if r.returncode != 0:
            return False
        with pa.memory_map(str(back)) as src:
            column = pa.ipc.open_file(src).read_all().column(0)
        return same(normalize(got, column), column.combine_chunks())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return False
    finally:
        back.unlink(missing_ok=True)


def _oracle_refuses(path: Path, name: str) -> str | None:
    """The first line of the error the pinned vortex-data (requirements.txt) raises reading column
    `name` of `path`, or None when it reads it."""
    try:
        vx.open(str(path)).to_arrow([name]).read_all()
        return None
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as e:  # noqa: BLE001 - a Rust panic is a BaseException
        return (str(e).splitlines() or [type(e).__name__])[0]


def _cell(a: pa.Array, i: int) -> str:
    return " ".join(a.slice(i, 1).to_string(window=1).split())


def check_release(out: Path, python: Path | None = None) -> Result:
    """Reads every column of every Vortex file in `out` with onecopy and compares it with pyarrow.

    Columns the release dropped at write time (writer.json) are absent from its file and not
    counted; every other column of the Arrow table must read equal. One that does not, but reads
    as the release itself reads it back (asked through its venv's `python`, when given) is the
    writer's loss: counted in `lossy`, not a failure.
    One onecopy refuses with an error the pinned vortex-data raises too (0.36's nullable structs
    without their validity, issue 19) is counted in `refused`; never an unsupported encoding."""
    res = Result()
    for path in sorted(out.glob("*.vortex")):
        res.files += 1
        exp = expected_table(path)
        try:
            f = onecopy.open(path)
            names = set(f.schema.names)
        except onecopy.OnecopyError as e:
            res.checked += exp.num_columns
            res.failures += [Failure(path.name, c, e.code, str(e)) for c in exp.column_names]
            continue
        if f.row_count != exp.num_rows:
            res.failures.append(Failure(path.name, "*", "differs", f"{f.row_count} rows, expected {exp.num_rows}"))
        for name in exp.column_names:
            if name not in names:
                continue
            res.checked += 1
            got, err = column_or_error(f, name)
            if err is not None:
                refusal = _oracle_refuses(path, name)
                if refusal is not None and err.code != "unsupported":
                    res.refused.append(Failure(path.name, name, err.code, f"{err.message} (vortex-data "
                                               f"{vx.__version__} too: {refusal})"))
                else:
                    res.failures.append(Failure(path.name, name, err.code, err.message))
                continue
            e = exp.column(name).combine_chunks()
            try:
                a = normalize(got, exp.column(name))
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as cast_error:
                a, why = None, f"read as {got.type}, which does not cast to {e.type}: {cast_error}"
            else:
                if same(a, e):
                    res.equal += 1
                    continue
                bad = _first_difference(a, e)
                why = f"{len(a)} rows, first difference at row {bad}: got {_cell(a, bad)} expected {_cell(e, bad)}"
            if _release_reads(path, name, got, python):
                res.lossy.append(Failure(path.name, name, "lossy", "the release reads back what onecopy reads: " + why))
            else:
                res.failures.append(Failure(path.name, name, "differs", why))
    return res


def run_release(version: str, tables: Path, cache: Path) -> tuple[dict, Result]:
    """Writes and checks one release under cache/files/<version>, holding cache/<version>.lock:
    two matrices sharing a cache take turns at a release instead of rewriting each other's files."""
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / f"{version}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        manifest = write_release(version, tables, cache / "files" / version, cache)
        return manifest, check_release(cache / "files" / version, release_env(version, cache))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("versions", nargs="+")
    ap.add_argument("--cache", type=Path, default=Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
                    / "onecopy-writer-matrix", help="venvs, tables and files (default: %(default)s)")
    ap.add_argument("--failures", type=Path, help="also write every failure, loss and unwritable column here")
    a = ap.parse_args()
    tables = write_tables(a.cache / "tables")
    log = open(a.failures, "w") if a.failures else open(os.devnull, "w")
    bad = 0
    print(f"{'release':<8} {'files':>5} {'columns':>7} {'equal':>5} {'lossy':>5} {'refused':>7} {'errors':>6}  "
          "first error", flush=True)
    for v in a.versions:
        try:
            manifest, res = run_release(v, tables, a.cache)
        except Exception as e:  # noqa: BLE001 - an install or write failure is a row of the table
            print(f"{v:<8} {'-':>5} {'-':>7} {'-':>5} {'-':>5} {'-':>7} {'-':>6}  not written: {e}", flush=True)
            print(f"{v} not written: {e}", file=log, flush=True)
            bad += 1
            continue
        first = str(res.failures[0]) if res.failures else ""
        notes = [f"{len(manifest['failed'])} files not written"] if manifest["failed"] else []
        if manifest["dropped"]:
            notes.append(f"{sum(len(d) for d in manifest['dropped'].values())} columns not writable")
        print(f"{v:<8} {res.files:>5} {res.checked:>7} {res.equal:>5} {len(res.lossy):>5} {len(res.refused):>7} "
              f"{len(res.failures):>6}  "
              f"{first[:200]}{'  [' + ', '.join(notes) + ']' if notes else ''}", flush=True)
        for f in res.failures + res.lossy + res.refused:
            print(f"{v} {f}", file=log)
        for k, m in manifest["failed"].items():
            print(f"{v} {k}: not written: {m}", file=log)
        for k, d in manifest["dropped"].items():
            for c, m in d.items():
                print(f"{v} {k}:{c}: not writable: {m}", file=log)
        log.flush()
        bad += bool(res.failures)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
