# SPDX-License-Identifier: Apache-2.0
"""The chart of scripts/bench_cache.sh (scripts/bench/cache_bench.py's results): per file count,
one row of bar charts (requests before the first batch, S3 MB per phase, samples/s), a group of
bars per phase (job A epoch 0, job A epoch 1, job B epoch 0), a bar per leg, drawn with
matplotlib into a PNG. matplotlib is installed into the venv when missing, as for
scripts/bench_format.py (format_chart.ensure_matplotlib); draw() never raises: it returns the
line to print (the benchmark never fails for its chart).
"""

from __future__ import annotations

from pathlib import Path

from format_chart import ensure_matplotlib

COLORS = {"onecopy": "#1b9e77", "streaming": "#d95f02", "vortex": "#7570b3"}
MEASURES = [("first_batch_requests", "requests before the first batch", lambda r: r["first_batch_requests"] or 0),
            ("bytes", "S3 MB in the phase", lambda r: r["bytes"] / 1e6),
            ("samples_s", "samples/s", lambda r: r["samples"] / r["wall_s"])]


def draw(path: Path, results: dict) -> str:
    why = ensure_matplotlib()
    if why is not None:
        return f"chart skipped: {why}"
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        runs = results["runs"]
        files = sorted({r["files"] for r in runs})
        legs = list(dict.fromkeys(r["leg"] for r in runs))
        names = {r["leg"]: r["name"] for r in runs}
        phases = list(dict.fromkeys(r["phase"] for r in runs))
        by = {(r["files"], r["leg"], r["phase"]): r for r in runs}
        width = 0.8 / len(legs)
        fig, axes = plt.subplots(len(files), len(MEASURES), figsize=(4.6 * len(MEASURES), 3.4 * len(files) + 1.0),
                                 squeeze=False)
        for i, n in enumerate(files):
            for j, (_, label, value) in enumerate(MEASURES):
                ax = axes[i][j]
                for k, leg in enumerate(legs):
                    xs = [p + (k - (len(legs) - 1) / 2) * width for p in range(len(phases))]
                    vals = [value(by[(n, leg, ph)]) if (n, leg, ph) in by else 0 for ph in phases]
                    bars = ax.bar(xs, vals, width, color=COLORS.get(leg, "#999999"), label=names[leg])
                    for b, v in zip(bars, vals):
                        ax.annotate(f"{v:,.0f}" if v >= 10 else f"{v:.2g}", (b.get_x() + b.get_width() / 2, b.get_height()),
                                    ha="center", va="bottom", fontsize=6)
                ax.set_xticks(range(len(phases)), phases, fontsize=8)
                ax.set_title(f"{n} files: {label}", fontsize=9)
                ax.margins(y=0.15)
                if i == 0 and j == 0:
                    ax.legend(fontsize=7)
        rate = results["rate_bits_per_s"]
        fig.suptitle(f"S3 traffic of a second epoch and a second job (link "
                     f"{'unthrottled' if not rate else f'{rate / 1e9:g} Gbit/s'}, {results['rows_per_file']} rows "
                     f"per file, batches of {results['batch_rows']})", fontsize=9)
        fig.tight_layout()
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=110)
        plt.close(fig)
        return f"chart: {path}"
    except Exception as e:  # noqa: BLE001 - the chart never fails the benchmark
        return f"chart skipped: drawing failed: {type(e).__name__}: {e}"
