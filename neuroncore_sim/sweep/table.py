"""The rows and the ranking of a parameter sweep table (see :mod:`neuroncore_sim.sweep.run`).

:func:`measured_row` turns one simulated point into the table's measured columns
(:data:`RESULT_COLUMNS`); :func:`rank` builds the table from all points, fastest first. pandas is
imported inside :func:`rank` only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..result import SimResult

if TYPE_CHECKING:
    import pandas as pd

#: Engine rows of the busy columns, in table order ("dma": the DMA engines' mean busy share).
ENGINES = ("tensor", "vector", "scalar", "gpsimd", "dma")
#: Measured columns of a sweep row, in table order.
RESULT_COLUMNS = ("latency_ns", "latency_us", *(f"{e}_busy_pct" for e in ENGINES), "dma_bytes",
                  "dma_bytes_per_ns", "dma_pct_of_peak", "bottleneck", "instructions", "match",
                  "max_abs_err", "error")
_INT_COLUMNS = ("dma_bytes", "instructions")
#: Columns the table adds besides the parameters and RESULT_COLUMNS.
INDEX_COLUMNS = ("point", "best")


def measured_row(result: SimResult) -> dict[str, Any]:
    """The measured columns of one point (``match``, ``max_abs_err`` and ``error`` None), as
    plain Python numbers so that rows read back from JSON equal fresh ones."""
    s = result.summary()
    cfg = result.config
    latency = float(s["latency_ns"])
    peak = cfg.dma_engines * cfg.dma_engine_bytes_per_ns
    return {
        "latency_ns": latency, "latency_us": latency / 1000.0,
        **{f"{e}_busy_pct": float(s["busy_percent"][e]) for e in ENGINES},
        "dma_bytes": int(s["dma_bytes"]), "dma_bytes_per_ns": float(s["dma_bytes_per_ns"]),
        "dma_pct_of_peak": 100.0 * float(s["dma_bytes_per_ns"]) / peak,
        "bottleneck": str(s["bottleneck"]), "instructions": int(sum(s["instructions"].values())),
        "match": None, "max_abs_err": None, "error": None}


def rank(points: list[dict[str, Any]], rows: list[dict[str, Any]]) -> "pd.DataFrame":
    """The sweep table: one row per point (``point`` = its index in ``points``), its parameters
    and measured columns, sorted by latency (ties by point, failed points last) and ``best``
    True on the fastest point without error whose result, if checked, matched."""
    import pandas as pd

    table = pd.DataFrame([{"point": i, **p, **{c: r.get(c) for c in RESULT_COLUMNS}}
                          for i, (p, r) in enumerate(zip(points, rows))])
    # Typed columns whatever failed: floats (NaN), counts and match as nullable (<NA>).
    for col in RESULT_COLUMNS:
        if col in _INT_COLUMNS:
            table[col] = table[col].astype("Int64")
        elif col == "match":
            table[col] = table[col].astype("boolean")
        elif col not in ("bottleneck", "error"):
            table[col] = table[col].astype(float)
    failed = table["error"].notna()
    table = (table.assign(_failed=failed)
             .sort_values(["_failed", "latency_ns", "point"], kind="stable")
             .drop(columns="_failed").reset_index(drop=True))
    # The fastest point that ran and whose result, when checked, matched the reference.
    good = table["error"].isna() & table["match"].fillna(True)
    table["best"] = False
    if good.any():
        table.loc[good.idxmax(), "best"] = True  # idxmax: the first True, as rows are sorted
    return table
