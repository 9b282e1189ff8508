"""Plot of a parameter sweep table (see :mod:`neuroncore_sim.sweep.run`).

One horizontal row per point, fastest on top, labelled with the parameters that vary:

* left: the estimated latency, the best point highlighted, failed points marked "error";
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

#: Most points drawn; a bigger sweep shows its fastest ones (the table has them all).
MAX_POINTS = 80
_COLOURS = {"tensor": "#4C72B0", "vector": "#55A868", "scalar": "#C44E52", "gpsimd": "#8172B2",
            "dma": "#CCB974"}
_BAR, _BEST, _WRONG, _ERROR = "#9DB4D3", "#E08214", "#D98C8C", "#B0B0B0"


def _labels(table: Any) -> tuple[list[str], str]:
    """Per-point labels from the parameters that vary, and a caption of the fixed ones."""
    params = [c for c in table.columns if c not in RESULT_COLUMNS and c not in INDEX_COLUMNS]
    varying = [c for c in params if table[c].astype(str).nunique() > 1]
    fixed = [c for c in params if c not in varying]
    labels = [", ".join(f"{c}={row[c]}" for c in varying) or f"point {row['point']}"
              for _, row in table.iterrows()]
    caption = ", ".join(f"{c}={table[c].iloc[0]}" for c in fixed)
    return labels, caption


def save_sweep_plot(table: Any, path: str | Path, title: str = "sweep") -> Path:
    """Draw the sweep ``table`` (as :func:`neuroncore_sim.sweep.run.sweep` returns it, sorted) into
    a PNG at ``path``; returns the path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shown = table.head(MAX_POINTS)
    labels, caption = _labels(shown)
    ok = shown["error"].isna().to_numpy()
    latency_us = shown["latency_us"].astype(float).fillna(0.0).to_numpy()
    y = list(range(len(shown)))
    fig, (left, right) = plt.subplots(1, 2, sharey=True, figsize=(13, 2.0 + 0.32 * len(shown)),
                                      gridspec_kw={"width_ratios": [1, 1.3]})
    wrong = shown["match"].eq(False).fillna(False).to_numpy(dtype=bool)
    colours = [_BEST if best else _ERROR if not good else _WRONG if bad else _BAR
               for best, good, bad in zip(shown["best"], ok, wrong)]
    left.barh(y, latency_us, color=colours)
    top = max(latency_us.max(initial=0.0), 1e-9)
    for i, (value, good, bad) in enumerate(zip(latency_us, ok, wrong)):
        text = "error" if not good else f"{value:,.1f}" + ("  result mismatch" if bad else "")
        left.text(value + 0.01 * top, i, text, va="center", fontsize=8)
    left.set_xlim(0, top * (1.45 if wrong.any() else 1.18))
    left.set_xlabel("estimated latency (us)")
    left.set_yticks(y, labels, fontsize=8)
    left.set_ylim(len(shown) - 0.5, -0.5)  # fastest on top, no empty margin
    left.set_title("latency (orange: best; red: result mismatch)", fontsize=10)

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
    more = f"  (fastest {MAX_POINTS} of {len(table)} points)" if len(table) > len(shown) else ""
    fig.suptitle(f"{title}" + (f"  [{caption}]" if caption else "") + more, fontsize=11)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
