"""Tables and a text summary of where a simulated launch spent its time.

* :func:`engine_table`: per engine row, busy time and share of the latency, instruction count,
  and time by opcode;
* :func:`dma_table`: per DMA engine, bytes, transfers, average transfer size, achieved
  bandwidth against the engine's peak, plus a "total" row against all engines' peak;
* :func:`source_table`: time per kernel source line, most expensive first;
* :func:`summary_text`: a readable multi-line summary for terminals and ``summary.txt``.

All tables are pandas DataFrames built from ``result.timing.events``; pandas is imported inside
the functions so that importing this module stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .events import TENSOR_LS_ROW, is_dma_row
from .result import SimResult

if TYPE_CHECKING:
    import pandas as pd

#: Engine rows always listed by :func:`engine_table`, even when idle (users ask "why is X idle").
MAIN_ENGINES = ("tensor", "vector", "scalar", "gpsimd")


def _busy_percent(busy_ns: float, latency_ns: float) -> float:
    return 100.0 * busy_ns / latency_ns if latency_ns > 0 else 0.0


def engine_table(result: SimResult) -> "pd.DataFrame":
    """Per-engine busy time: one row per compute engine row (plus "dma", all DMA engines).

    Columns: ``busy_ns``, ``busy_percent`` (of the launch latency; for "dma" the DMA engines'
    summed busy time over their count), ``instructions`` (distinct instructions that ran there),
    ``events`` and one ``<opcode>_ns`` column per opcode (time that row spent on it).
    Index: the engine row name.
    """
    import pandas as pd

    latency = result.latency_ns
    df = result.events
    df = df.assign(row=[("dma" if is_dma_row(e) else e) for e in df["engine"]])
    used = set(df["row"])
    rows = [r for r in MAIN_ENGINES + ("sync", TENSOR_LS_ROW) if r in used or r in MAIN_ENGINES]
    rows += sorted(used - set(rows) - {"dma"}) + ["dma"]
    by_op = df.pivot_table(index="row", columns="opcode", values="duration_ns", aggfunc="sum",
                           fill_value=0.0)
    by_op.columns = [f"{c}_ns" for c in by_op.columns]
    g = df.groupby("row")
    table = pd.DataFrame({"busy_ns": g["duration_ns"].sum(),
                          "instructions": g["instr_id"].nunique(),
                          "events": g.size()}).join(by_op)
    table = table.reindex(rows).fillna(0.0)
    n_dma = result.config.dma_engines
    table["busy_percent"] = [
        _busy_percent(b / (n_dma if r == "dma" else 1), latency)
        for r, b in zip(table.index, table["busy_ns"])]
    table[["instructions", "events"]] = table[["instructions", "events"]].astype(int)
    order = ["busy_ns", "busy_percent", "instructions", "events"]
    table = table[order + [c for c in table.columns if c not in order]]
    table.index.name = "engine"
    return table


def dma_table(result: SimResult) -> "pd.DataFrame":
    """Per DMA engine traffic and bandwidth, plus a "total" row.

    Columns: ``bytes``, ``transfers``, ``avg_transfer_bytes``, ``busy_ns``,
    ``bytes_per_ns`` (achieved: bytes over the launch latency), ``peak_bytes_per_ns`` (one engine:
    ``config.dma_engine_bytes_per_ns``; total: times ``config.dma_engines``) and
    ``percent_of_peak``. Index: "dma0" .. and "total".
    """
    import pandas as pd

    cfg = result.config
    latency = result.latency_ns
    df = result.events
    df = df[[is_dma_row(e) for e in df["engine"]]]
    g = df.groupby("engine")
    table = pd.DataFrame({"bytes": g["nbytes"].sum(), "transfers": g.size(),
                          "busy_ns": g["duration_ns"].sum()})
    table = table.reindex(sorted(table.index, key=lambda r: int(r[3:])))
    table["peak_bytes_per_ns"] = cfg.dma_engine_bytes_per_ns
    total = pd.DataFrame({"bytes": [table["bytes"].sum()], "transfers": [table["transfers"].sum()],
                          "busy_ns": [table["busy_ns"].sum()],
                          "peak_bytes_per_ns": [cfg.dma_engines * cfg.dma_engine_bytes_per_ns]},
                         index=["total"])
    table = pd.concat([table, total])
    table["bytes"] = table["bytes"].astype(int)
    table["transfers"] = table["transfers"].astype(int)
    table["avg_transfer_bytes"] = table["bytes"] / table["transfers"].where(table["transfers"] > 0)
    table["bytes_per_ns"] = table["bytes"] / latency if latency > 0 else 0.0
    table["percent_of_peak"] = 100.0 * table["bytes_per_ns"] / table["peak_bytes_per_ns"]
    table.index.name = "engine"
    return table[["bytes", "transfers", "avg_transfer_bytes", "busy_ns", "bytes_per_ns",
                  "peak_bytes_per_ns", "percent_of_peak"]]


def source_table(result: SimResult) -> "pd.DataFrame":
    """Engine time per kernel source line, most expensive first.

    Columns: ``busy_ns`` (summed over all rows, so a DMA split over 16 engines counts 16 times
    its wall time: this is the work the line caused), ``percent`` (of all busy time),
    ``instructions``, ``engines`` (comma-separated rows, DMA engines as "dma"), ``opcodes``.
    Index: "file.py:LINE" ("" for instructions without a kernel line).
    """
    df = result.events
    df = df.assign(row=[("dma" if is_dma_row(e) else e) for e in df["engine"]])
    g = df.groupby("source")
    table = g.agg(busy_ns=("duration_ns", "sum"), instructions=("instr_id", "nunique"),
                  engines=("row", lambda s: ",".join(sorted(set(s)))),
                  opcodes=("opcode", lambda s: ",".join(sorted(set(s)))))
    total = table["busy_ns"].sum()
    table.insert(1, "percent", 100.0 * table["busy_ns"] / total if total > 0 else 0.0)
    # Ties (e.g. identical loads) keep the order of appearance in the file: sort by line too.
    table = table.assign(_line=[_line_of(s) for s in table.index])
    table = table.sort_values(["busy_ns", "_line"], ascending=[False, True]).drop(columns="_line")
    return table


def _line_of(source: str) -> int:
    tail = source.rpartition(":")[2]
    return int(tail) if tail.isdigit() else 0


def summary_text(result: SimResult) -> str:
    """A readable multi-line summary: latency (ns, us, cycles of the named clock), bottleneck,
    busy share per engine, DMA traffic and the most expensive source lines."""
    s = result.summary()
    cfg = result.config
    latency = s["latency_ns"]
    clock_ghz = cfg.tensor_clock_hz / 1e9
    lines = [
        f"kernel     : {result.program.name}"
        + (f" (grid {list(result.program.grid)})" if result.program.grid else ""),
        f"config     : {cfg.name}",
        f"latency    : {latency:,.0f} ns = {latency / 1000:,.2f} us = "
        f"{s['latency_tensor_cycles']:,.0f} cycles of the TensorE clock ({clock_ghz:g} GHz)",
        f"bottleneck : {s['bottleneck']}"
        + ("  (no engine busy more than half the time)" if s["bottleneck"] == "latency" else ""),
        "busy       : " + ", ".join(
            f"{row} {s['busy_percent'][row]:.1f}%" for row in MAIN_ENGINES + ("dma",)),
    ]
    n_instr = sum(s["instructions"].values())
    lines.append(f"instructions: {n_instr} ("
                 + ", ".join(f"{k} {v}" for k, v in sorted(s["instructions"].items())) + ")")
    peak = cfg.dma_engines * cfg.dma_engine_bytes_per_ns
    lines.append(f"dma        : {s['dma_bytes']:,} bytes in {s['dma_transfers']} transfers, "
                 f"{s['dma_bytes_per_ns']:.1f} B/ns = "
                 f"{_busy_percent(s['dma_bytes_per_ns'], peak):.0f}% of the "
                 f"{cfg.dma_engines} engines' {peak:.1f} B/ns peak")
    top = source_table(result).head(3)
    if len(top):
        lines.append("top lines  : " + "; ".join(
            f"{src or '?'} {row.percent:.0f}%" for src, row in top.iterrows()))
    return "\n".join(lines) + "\n"

