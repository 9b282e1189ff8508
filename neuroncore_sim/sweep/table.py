"""The rows and the ranking of a parameter sweep table (see :mod:`neuroncore_sim.sweep.run`).

:func:`measured_row` turns one simulated point into the table's measured columns
(:data:`RESULT_COLUMNS`); :func:`rank` builds the table from all points: grouped by problem (the
points that solve the same problem, with the same input parameters), fastest first in each, the
best of each problem marked. pandas is imported inside :func:`rank` only.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from ..result import SimResult

if TYPE_CHECKING:
    import pandas as pd

#: Engine rows of the busy columns, in table order ("dma": the DMA engines' mean busy share).
ENGINES = ("tensor", "vector", "scalar", "gpsimd", "dma")
#: Measured columns of a sweep row, in table order.
RESULT_COLUMNS = ("latency_ns", "latency_us", *(f"{e}_busy_pct" for e in ENGINES), "dma_bytes",
                  "dma_bytes_per_ns", "dma_pct_of_peak", "bottleneck", "instructions", "match",
                  "max_abs_err", "flag", "error")
_INT_COLUMNS = ("dma_bytes", "instructions")
#: Columns the table adds besides the parameters and RESULT_COLUMNS.
INDEX_COLUMNS = ("point", "problem", "best")
#: Text columns of RESULT_COLUMNS (the others are numbers or booleans).
TEXT_COLUMNS = ("bottleneck", "flag", "error")


def measured_row(result: SimResult, flags: list[str] | None = None) -> dict[str, Any]:
    """The measured columns of one point (``match``, ``max_abs_err`` and ``error`` None), as
    plain Python numbers so that rows read back from JSON equal fresh ones. ``flags``: why the
    measurement cannot be trusted (outputs left unwritten, say); a launch that recorded no
    instruction is flagged here. ``flag`` joins them, or is None."""
    s = result.summary()
    latency = float(s["latency_ns"])
    instructions = int(sum(s["instructions"].values()))
    flags = list(flags or [])
    if instructions == 0:  # a loop that ran zero times, say: 0 us would top every sweep
        flags.insert(0, "no instruction recorded (the kernel did no work)")
    return {
        "latency_ns": latency, "latency_us": latency / 1000.0,
        **{f"{e}_busy_pct": float(s["busy_percent"][e]) for e in ENGINES},
        "dma_bytes": int(s["dma_bytes"]), "dma_bytes_per_ns": float(s["dma_bytes_per_ns"]),
        # the summary's own figure: against the peak of the kernel's mix of DMAs (HBM reads
        # at their rate, the rest at the write rate), as the bottleneck evidence quotes it
        "dma_pct_of_peak": float(s["dma_bandwidth_percent_of_peak"]),
        "bottleneck": str(s["bottleneck"]), "instructions": instructions,
        "match": None, "max_abs_err": None, "flag": "; ".join(flags) or None, "error": None}


def rank(points: list[dict[str, Any]], rows: list[dict[str, Any]],
         shape: tuple[str, ...] | list[str] = ()) -> "pd.DataFrame":
    """The sweep table: one row per point (``point`` = its index in ``points``), its parameters
    and measured columns.

    ``shape`` names the parameters that set the problem (the kernel file's ``example_inputs``
    parameters): points with equal values of them solve the same problem and are compared with
    each other. ``problem`` numbers those groups in the order they first appear in ``points``.
    Rows are sorted by problem, then within it: measured points by latency (ties by point),
    flagged points (no instruction, an output left unwritten) after them, failed points last.
    ``best`` is True on the fastest point of each problem that ran, was not flagged and whose
    result, if checked, matched the reference.
    """
    import pandas as pd

    keys = [json.dumps([p.get(n) for n in shape], sort_keys=True) for p in points]
    problem = {k: i for i, k in enumerate(dict.fromkeys(keys))}
    table = pd.DataFrame([{"point": i, **p, **{c: r.get(c) for c in RESULT_COLUMNS}}
                          for i, (p, r) in enumerate(zip(points, rows))])
    table.insert(1, "problem", [problem[k] for k in keys])
    # Typed columns whatever failed: floats (NaN), counts and match as nullable (<NA>).
    for col in RESULT_COLUMNS:
        if col in _INT_COLUMNS:
            table[col] = table[col].astype("Int64")
        elif col == "match":
            table[col] = table[col].astype("boolean")
        elif col not in TEXT_COLUMNS:
            table[col] = table[col].astype(float)
        else:  # text, or None (rows saved before the column existed read back as None)
            table[col] = table[col].astype(object).where(table[col].notna(), None)
    status = table["error"].notna() * 2 + table["flag"].notna()
    table = (table.assign(_status=status)
             .sort_values(["problem", "_status", "latency_ns", "point"], kind="stable")
             .drop(columns="_status").reset_index(drop=True))
    # Per problem, the fastest point that ran unflagged and whose result, when checked, matched.
    good = table["error"].isna() & table["flag"].isna() & table["match"].fillna(True)
    table["best"] = False
    firsts = table[good].groupby("problem", sort=False).head(1).index  # rows are sorted
    table.loc[firsts, "best"] = True
    return table
