# SPDX-License-Identifier: Apache-2.0
"""The charts of scripts/bench_e2e.sh, one PNG per kind of table it prints, drawn with matplotlib
(scripts/bench/charts.py) into its --chart-dir:

    e2e-epochs.png   per (num_workers, shuffle) table, a row of three panels: samples/s, CPU s/GB
                     in total (training process, workers, onecopyd and the S3 server) and time
                     to first batch, a bar per system
    e2e-filter.png   per num_workers, a row of two panels: time to the first batch under the new
                     filter, shard rewrites included (log scale where the bars span 10x or
                     more), and samples/s of the filtered epoch of the systems that push it down
    e2e-convert.png  the conversion table (scripts/bench/convert_bench.py): wall and CPU seconds

The charts hold the tables' numbers, nothing else. draw() and draw_convert() never raise: they
return the lines to print (the benchmark never fails for its charts).
"""

from __future__ import annotations

from pathlib import Path

from charts import COLORS, bar_grid


def _color(system: str) -> str:
    return COLORS.get(system, "#999999")


def draw(chart_dir: Path, epoch_cells: list, filter_cells: list, names: dict[str, str], title: str) -> list[str]:
    """epoch_cells: [(workers, shuffle, {system: cell})] with report_epochs' cells; filter_cells:
    [(workers, {system: (rewrite s, first batch s, total s, filtered epoch samples/s or None)})]."""
    panels = []
    for w, m, cells in epoch_cells:
        where = f"num_workers={w}, shuffle {m}"
        for key, what, fmt in (("sps", "samples/s (higher is better)", ",.0f"),
                               ("total", "CPU s/GB, total (lower is better)", ".2f"),
                               ("ttfb", "first batch ms (lower is better)", ".0f")):
            panels.append({"title": f"{what.split(' (')[0]}, {where}", "ylabel": what,
                           "bars": [(names[s], c[key], format(c[key], fmt), _color(s)) for s in cells
                                    if (c := cells[s]).get(key) is not None]})
    filt = []
    for w, cells in filter_cells:
        filt.append({"title": f"new filter quality > 0.8, num_workers={w}", "ylabel": "s to first batch, rewrite included",
                     "bars": [(names.get(s, s), tot, f"{tot:.2f}", _color(s)) for s, (_, _, tot, _) in cells.items()],
                     "log": "auto"})
        rates = [(names.get(s, s), rate, f"{rate:,.0f}", _color(s)) for s, (_, _, _, rate) in cells.items()
                 if rate is not None]
        if rates:  # none when no system that pushes the filter down ran
            filt.append({"title": f"filtered epoch, num_workers={w}", "ylabel": "samples/s (higher is better)",
                         "bars": rates})
    out = []
    if panels:
        out.append(bar_grid(chart_dir / "e2e-epochs.png", panels, title, 3))
    if filt:
        out.append(bar_grid(chart_dir / "e2e-filter.png", filt, title, 2))
    return out


def draw_convert(chart_dir: Path, cells: dict, names: dict[str, str], tools: dict[str, str], title: str) -> str:
    """cells: {system: {"wall", "cpu", ...}} from convert_bench's report."""
    panels = [{"title": f"conversion from Parquet, {what}", "ylabel": f"{what} (lower is better)",
               "bars": [(f"{names[s]}\n{tools[s]}", c[key], f"{c[key]:.2f}", _color(s)) for s, c in cells.items()]}
              for key, what in (("wall", "wall s"), ("cpu", "CPU s"))]
    return bar_grid(chart_dir / "e2e-convert.png", panels, title, 2)
