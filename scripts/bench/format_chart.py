# SPDX-License-Identifier: Apache-2.0
"""The chart of scripts/bench_format.py: one bar chart per measurement and thread count (time
per system, best over the interleaved child processes), drawn with matplotlib into a PNG.

ensure_matplotlib() installs scripts/bench-format-requirements.txt into the running venv when
matplotlib is missing (numpy held where it is by a constraint), and says why not when it cannot;
draw() never raises: it returns the message to print (the benchmark never fails for its chart).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
REQUIREMENTS = ROOT / "scripts" / "bench-format-requirements.txt"

COLORS = {"onecopy": "#1b9e77", "vortex-data": "#7570b3", "parquet": "#d95f02", "parquet-ra": "#e6ab02"}


def _imports() -> str | None:
    """None when matplotlib (Agg) imports in a fresh interpreter of this venv, else the error."""
    r = subprocess.run([sys.executable, "-c", "import matplotlib; matplotlib.use('Agg'); import matplotlib.pyplot"],
                       capture_output=True, text=True)
    return None if r.returncode == 0 else (r.stderr.strip().splitlines() or ["import failed"])[-1]


def ensure_matplotlib() -> str | None:
    """None when matplotlib is importable (installing it if needed), else why the chart is
    skipped; never raises."""
    try:
        return _ensure()
    except Exception as e:  # noqa: BLE001 - the chart never fails the benchmark
        return f"could not check or install matplotlib: {type(e).__name__}: {e}"


def _ensure() -> str | None:
    err = _imports()
    if err is None:
        return None
    if sys.prefix == sys.base_prefix:
        return f"matplotlib is missing ({err}) and {sys.executable} is not a venv: not installing it there"
    import numpy

    print(f"matplotlib is missing ({err}): installing {REQUIREMENTS.name} into {sys.prefix} "
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
        return f"pip could not install matplotlib: {tail}"
    err = _imports()
    return None if err is None else f"matplotlib installed but does not import: {err}"


def _fmt(s: float) -> str:
    if s < 1e-3:
        return f"{s * 1e6:.0f} µs"
    return f"{s * 1e3:.3g} ms" if s < 10 else f"{s:.1f} s"


def draw(path: Path, best: dict, systems: list[str], labels: dict[str, str], measures: list[tuple[str, str]],
         threads: list[int], title: str, method: str) -> str:
    """best[(measure, threads, system)] = seconds. One row of bar charts per thread count, one
    column per measurement; take charts on a log scale where their bars span an order of magnitude
    or more (a linear one otherwise, so that two close bars look close)."""
    why = ensure_matplotlib()
    if why is not None:
        return f"chart skipped: {why}"
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, axes = plt.subplots(len(threads), len(measures), figsize=(4.2 * len(measures), 3.6 * len(threads) + 1.0),
                                 squeeze=False)
        for i, t in enumerate(threads):
            for j, (key, label) in enumerate(measures):
                ax = axes[i][j]
                names = [s for s in systems if (key, t, s) in best]
                vals = [best[(key, t, s)] * 1e3 for s in names]
                bars = ax.bar(range(len(names)), vals, color=[COLORS.get(s, "#999999") for s in names])
                ax.set_xticks(range(len(names)), [labels[s] for s in names], rotation=20, ha="right", fontsize=8)
                ax.set_title(f"{label}, {t} thread{'s' if t > 1 else ''}", fontsize=9)
                ax.set_ylabel("ms (lower is better)", fontsize=8)
                if "take" in key and vals and min(vals) > 0 and max(vals) >= 10 * min(vals):
                    ax.set_yscale("log")
                for b, s in zip(bars, names):
                    ax.annotate(_fmt(best[(key, t, s)]), (b.get_x() + b.get_width() / 2, b.get_height()),
                                ha="center", va="bottom", fontsize=7)
                ax.margins(y=0.15)
        fig.suptitle(f"{title}\n{method}", fontsize=9)
        fig.tight_layout()
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=110)
        plt.close(fig)
        return f"chart: {path}"
    except Exception as e:  # noqa: BLE001 - the chart never fails the benchmark
        return f"chart skipped: drawing failed: {type(e).__name__}: {e}"
