# SPDX-License-Identifier: Apache-2.0
"""The charts of scripts/bench_format.py, one PNG per table it prints, drawn with matplotlib
(scripts/bench/charts.py) into --chart-dir:

    format-time.png        time per system, one panel per measurement and thread count (best over
                           the interleaved child processes); take panels on a log scale where
                           their bars span an order of magnitude or more
    format-throughput.png  decoded GB/s per core of each full scan, per thread count and file
                           (this machine's single-thread memcpy rate in the title)
    format-bytes.png       rchar per system, one panel per measurement and thread count
    format-sizes.png       bytes on disk of every file

draw() never raises: it returns the lines to print (the benchmark never fails for its charts).
"""

from __future__ import annotations

from pathlib import Path

from charts import COLORS, bar_grid, ensure_matplotlib  # noqa: F401 - ensure_matplotlib: cache_chart.py's


def _fmt_time(s: float) -> str:
    if s < 1e-3:
        return f"{s * 1e6:.0f} µs"
    return f"{s * 1e3:.3g} ms" if s < 10 else f"{s:.1f} s"


def _thr(t: int) -> str:
    return f"{t} thread{'s' if t > 1 else ''}"


def draw(chart_dir: Path, best: dict, systems_of, labels: dict[str, str], measures: list[tuple[str, str]],
         threads: list[int], throughput: list[tuple[int, str, str, float]], memcpy_gbps: float, rchar: dict,
         sizes: list[tuple[str, str, int]], title: str, method: str) -> list[str]:
    """best[(measure, threads, system)] = seconds and rchar[(measure, threads, system)] = bytes,
    for the systems systems_of(measure); throughput: (threads, file, system, GB/s per core);
    sizes: (label, color key, bytes). Returns a line per chart."""
    def bars(values: dict, key, t, scale: float, text):
        return [(labels[s], values[(key, t, s)] * scale, text(values[(key, t, s)]), COLORS.get(s, "#999999"))
                for s in systems_of(key) if values.get((key, t, s)) is not None]

    time_panels = [{"title": f"{label}, {_thr(t)}", "ylabel": "ms (lower is better)",
                    "bars": bars(best, key, t, 1e3, _fmt_time), "log": "auto" if "take" in key else False}
                   for t in threads for key, label in measures]
    byte_panels = [{"title": f"{label}, {_thr(t)}", "ylabel": "rchar MiB",
                    "bars": bars(rchar, key, t, 1 / 2**20, lambda b: f"{b / 2**20:.1f}"), "log": "auto"}
                   for t in threads for key, label in measures]
    tp_panels = [{"title": f"full scan, {f} file, {_thr(t)}", "ylabel": "decoded GB/s per core (higher is better)",
                  "bars": [(labels[s], g, f"{g:.2f}", COLORS.get(s, "#999999"))
                           for tt, ff, s, g in throughput if tt == t and ff == f]}
                 for t in threads for f in dict.fromkeys(f for _, f, _, _ in throughput)]
    size_panel = [{"title": "file size on disk", "ylabel": "MiB (lower is better)",
                   "bars": [(label, b / 2**20, f"{b / 2**20:.1f}", COLORS.get(c, "#999999")) for label, c, b in sizes]}]
    head = f"{title}\n{method}"
    return [bar_grid(chart_dir / "format-time.png", time_panels, head, len(measures)),
            bar_grid(chart_dir / "format-throughput.png", tp_panels,
                     f"{head}\nthis machine's single-thread memcpy: {memcpy_gbps:.2f} GB/s", len(tp_panels) // len(threads)),
            bar_grid(chart_dir / "format-bytes.png", byte_panels, head + "\nrchar: read(2)/pread(2) bytes "
                     "(not io_uring or mmap: onecopy's reads are not in it)", len(measures)),
            bar_grid(chart_dir / "format-sizes.png", size_panel, title, 1)]
