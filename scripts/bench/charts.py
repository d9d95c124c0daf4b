# SPDX-License-Identifier: Apache-2.0
"""What the benchmarks' charts share: the packages they need and one way to draw a table.

ensure_matplotlib() and ensure_lance() install scripts/bench-format-requirements.txt (matplotlib,
and pylance for the Lance contender of scripts/bench_format.py and scripts/bench_e2e.sh) into the
running venv when the module is missing (numpy held where it is by a constraint), and say why not
when they cannot. bar_grid() draws a table as a grid of bar charts, one panel per row or measure
of the table, into a PNG. Neither raises: the benchmark never fails for its chart.

A panel is a dict:
    title   the panel's title
    ylabel  the unit and which way is better ("ms (lower is better)")
    bars    [(label, value, text, color)]: a bar per system (value None: left out)
    log     True: log scale; "auto": log when the bars span 10x or more; False (default): linear
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
REQUIREMENTS = ROOT / "scripts" / "bench-format-requirements.txt"

# One color per system across every chart of every benchmark.
COLORS = {"onecopy": "#1b9e77", "vortex-data": "#7570b3", "vortex": "#7570b3", "parquet": "#d95f02",
          "parquet-ra": "#e6ab02", "lance": "#e7298a", "wds": "#66a61e", "mds": "#a6761d",
          "wds-select": "#b3de69"}


def _imports(code: str) -> str | None:
    """None when @code runs in a fresh interpreter of this venv, else the error's last line."""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    return None if r.returncode == 0 else (r.stderr.strip().splitlines() or ["import failed"])[-1]


def _ensure(code: str, what: str) -> str | None:
    err = _imports(code)
    if err is None:
        return None
    if sys.prefix == sys.base_prefix:
        return f"{what} is missing ({err}) and {sys.executable} is not a venv: not installing it there"
    import numpy

    print(f"{what} is missing ({err}): installing {REQUIREMENTS.name} into {sys.prefix} "
          f"(numpy held at {numpy.__version__}) ...", file=sys.stderr)
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as c:
        c.write(f"numpy=={numpy.__version__}\n")
    try:
        r = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check",
                            "-r", str(REQUIREMENTS), "-c", c.name], capture_output=True, text=True)
    finally:
        os.unlink(c.name)
    if r.returncode != 0:
        tail = " ".join((r.stderr or r.stdout).strip().splitlines()[-2:])
        return f"pip could not install {what}: {tail}"
    err = _imports(code)
    return None if err is None else f"{what} installed but does not import: {err}"


def _safe(code: str, what: str) -> str | None:
    try:
        return _ensure(code, what)
    except Exception as e:  # noqa: BLE001 - a missing extra never fails the benchmark by itself
        return f"could not check or install {what}: {type(e).__name__}: {e}"


def ensure_matplotlib() -> str | None:
    """None when matplotlib (Agg) is importable (installing it if needed), else why the charts
    are skipped; never raises."""
    return _safe("import matplotlib; matplotlib.use('Agg'); import matplotlib.pyplot", "matplotlib")


def ensure_lance() -> str | None:
    """None when pylance is importable (installing it if needed), else why Lance is left out;
    never raises."""
    return _safe("import lance", "pylance")


def bar_grid(path: Path, panels: list[dict], title: str, ncols: int) -> str:
    """Draws @panels, @ncols to a row, under @title into the PNG @path; returns the line to print."""
    why = ensure_matplotlib()
    if why is not None:
        return f"chart skipped: {why}"
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        ncols = max(1, min(ncols, len(panels)))
        nrows = (len(panels) + ncols - 1) // ncols
        fig, axes = plt.subplots(nrows, ncols, figsize=(4.2 * ncols, 3.6 * nrows + 1.0), squeeze=False)
        for ax in axes.flat[len(panels):]:
            ax.set_visible(False)
        for ax, p in zip(axes.flat, panels):
            bars = [b for b in p["bars"] if b[1] is not None]
            drawn = ax.bar(range(len(bars)), [b[1] for b in bars], color=[b[3] for b in bars])
            ax.set_xticks(range(len(bars)), [b[0] for b in bars], rotation=20, ha="right", fontsize=8)
            ax.set_title(p["title"], fontsize=9)
            ax.set_ylabel(p["ylabel"], fontsize=8)
            vals = [b[1] for b in bars if b[1] > 0]
            log = p.get("log", False)
            if log is True or (log == "auto" and vals and max(vals) >= 10 * min(vals)):
                ax.set_yscale("log")
            for rect, b in zip(drawn, bars):
                ax.annotate(b[2], (rect.get_x() + rect.get_width() / 2, rect.get_height()),
                            ha="center", va="bottom", fontsize=7)
            ax.margins(y=0.15)
        width = int(4.2 * ncols * 12)  # characters of 9-point text across the figure
        fig.suptitle("\n".join(textwrap.fill(line, width) for line in title.splitlines()), fontsize=9)
        fig.tight_layout()
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=110)
        plt.close(fig)
        return f"chart: {path}"
    except Exception as e:  # noqa: BLE001 - the chart never fails the benchmark
        return f"chart skipped: drawing failed: {type(e).__name__}: {e}"
