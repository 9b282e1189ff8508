"""Plot of a parameter sweep table (see :mod:`neuroncore_sim.sweep.run`).

One horizontal row per point, labelled with the parameters that vary, grouped by problem (the
points with the same input parameters, separated by a line), fastest on top in each:

* left: the estimated latency, each problem's best point highlighted, failed points marked
  "error", flagged ones (no instruction recorded, an output left unwritten) "flagged";
* right: where the time goes: each engine's busy time stacked (TensorE, VectorE, ScalarE,
  GpSimd and the DMA engines' mean), with the latency as a black tick. Engines overlap, so the
  stack is longer than the tick when they run in parallel, and a stack much shorter than the
  tick means the engines wait (on dependencies or on latency).

matplotlib is imported inside the function (Agg backend), so importing this module is free.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .table import ENGINES, INDEX_COLUMNS, RESULT_COLUMNS

#: Most points drawn; a bigger sweep shows the fastest ones of each problem (the table has all).
MAX_POINTS = 80
_COLOURS = {"tensor": "#4C72B0", "vector": "#55A868", "scalar": "#C44E52", "gpsimd": "#8172B2",
            "dma": "#CCB974"}
_BAR, _BEST, _WRONG, _ERROR, _FLAG = "#9DB4D3", "#E08214", "#D98C8C", "#B0B0B0", "#E6D36A"


def _labels(table: Any) -> tuple[list[str], str]:
    """Per-point labels from the parameters that vary, and a caption of the fixed ones."""
    params = [c for c in table.columns if c not in RESULT_COLUMNS and c not in INDEX_COLUMNS]
    varying = [c for c in params if table[c].astype(str).nunique() > 1]
    fixed = [c for c in params if c not in varying]
    labels = [", ".join(f"{c}={row[c]}" for c in varying) or f"point {row['point']}"
              for _, row in table.iterrows()]
    caption = ", ".join(f"{c}={table[c].iloc[0]}" for c in fixed)
    return labels, caption


def bar_colours(shown: Any) -> list[str]:
    """The latency bar colour of each row: orange for a best point (one per problem), grey for
    a failed one, yellow for a flagged one, red for a result mismatch, blue otherwise."""
    flagged = shown["flag"].notna() if "flag" in shown else [False] * len(shown)
    wrong = shown["match"].eq(False).fillna(False)
    return [_BEST if best else _ERROR if failed else _FLAG if flag else _WRONG if bad else _BAR
            for best, failed, flag, bad in zip(shown["best"], shown["error"].notna(), flagged,
                                               wrong)]


def problem_lines(problems: list[int]) -> list[float]:
    """y of the lines drawn between consecutive rows of different problems."""
    return [i - 0.5 for i in range(1, len(problems)) if problems[i] != problems[i - 1]]


def save_sweep_plot(table: Any, path: str | Path, title: str = "sweep") -> Path:
    """Draw the sweep ``table`` (as :func:`neuroncore_sim.sweep.run.sweep` returns it, sorted) into
    a PNG at ``path``; returns the path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    problems = table["problem"] if "problem" in table else [0] * len(table)
    per_problem = max(1, MAX_POINTS // max(1, len(set(problems))))
    shown = table.groupby(problems, sort=False).head(per_problem).head(MAX_POINTS)
    labels, caption = _labels(shown)
    ok = shown["error"].isna().to_numpy()
    flagged = (shown["flag"].notna().to_numpy() if "flag" in shown
               else [False] * len(shown))
    latency_us = shown["latency_us"].astype(float).fillna(0.0).to_numpy()
    y = list(range(len(shown)))
    fig, (left, right) = plt.subplots(1, 2, sharey=True, figsize=(13, 2.0 + 0.32 * len(shown)),
                                      gridspec_kw={"width_ratios": [1, 1.3]})
    wrong = shown["match"].eq(False).fillna(False).to_numpy(dtype=bool)
    left.barh(y, latency_us, color=bar_colours(shown))
    top = max(latency_us.max(initial=0.0), 1e-9)
    for i, (value, good, flag, bad) in enumerate(zip(latency_us, ok, flagged, wrong)):
        text = ("error" if not good else f"{value:,.1f}" + ("  flagged" if flag else "")
                + ("  result mismatch" if bad else ""))
        left.text(value + 0.01 * top, i, text, va="center", fontsize=8)
    left.set_xlim(0, top * (1.45 if wrong.any() or any(flagged) else 1.18))
    left.set_xlabel("estimated latency (us)")
    left.set_yticks(y, labels, fontsize=8)
    left.set_ylim(len(shown) - 0.5, -0.5)  # fastest on top, no empty margin
    groups = list(shown["problem"]) if "problem" in shown else [0] * len(shown)
    several = len(set(groups)) > 1
    left.set_title("latency (orange: best" + (" of each problem" if several else "")
                   + "; red: result mismatch; yellow: flagged)", fontsize=10)

    start = [0.0] * len(shown)
    for engine in ENGINES:
        busy = (shown[f"{engine}_busy_pct"].astype(float).fillna(0.0).to_numpy() / 100.0
                * latency_us)
        right.barh(y, busy, left=start, color=_COLOURS[engine], label=engine, height=0.7)
        start = [s + b for s, b in zip(start, busy)]
    right.scatter(latency_us[ok], [v for v, good in zip(y, ok) if good], marker="|", s=260,
                  color="black", linewidths=2, label="latency", zorder=3)
    right.set_xlabel("engine busy time, stacked (us)")
    right.set_title("where the time goes", fontsize=10)
    right.legend(loc="upper center", bbox_to_anchor=(0.5, -0.5 / (1 + 0.25 * len(shown))),
                 fontsize=8, ncol=6, frameon=False)
    for ax in (left, right):
        ax.grid(axis="x", alpha=0.3)
        ax.set_axisbelow(True)
        for at in problem_lines(groups):  # between problems (different input shapes)
            ax.axhline(at, color="black", linewidth=0.8)
    more = (f"  (fastest {len(shown)} of {len(table)} points)" if len(table) > len(shown)
            else "")
    fig.suptitle(f"{title}" + (f"  [{caption}]" if caption else "") + more, fontsize=11)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
