"""Tables and a text summary of where a simulated launch spent its time.

* :func:`engine_table`: per engine row, busy time and share of the latency, instruction count,
  and time by opcode;
* :func:`dma_table`: per DMA engine, bytes, transfers, average transfer size, achieved
  bandwidth against the engine's peak, plus a "total" row against all engines' peak;
* :func:`source_table`: time per kernel source line, most expensive first;
* :func:`memory_table`: SBUF/PSUM use per allocation site; :func:`memory_series`: bytes per
  partition in use over time;
* :func:`stall_table`: the largest causes of compute engine idle time;
* :func:`summary_text`: a readable multi-line summary for terminals and ``summary.txt``.

Two DMA numbers are kept apart on purpose: *queue busy* (share of the latency the DMA engines
spend on transfers, including per-buffer overheads and HBM waits) and *bandwidth* (bytes moved
over the latency against the peak of all DMA engines). A kernel moving many small buffers keeps
its queues busy while moving a fraction of the peak bytes.

Units: per engine row, busy time is that row's (the "dma" row: the mean over its queues, as
``summary()["busy_ns"]["dma"]``); per source line and in the DMA total, time is summed over every
row, each DMA queue counted (the work a line caused, which can exceed the latency).

All tables are pandas DataFrames built from ``result.timing.events``; pandas is imported inside
the functions so that importing this module stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..timing import analysis, memory_use
from ..timing.cost import dma_rate
from .advice import advice
from ..timing.events import MAIN_ENGINES, TENSOR_LS_ROW, is_dma_row
from ..program.ir import DMA_OPCODES, MemSpace
from ..error_band import likely_text
from ..result import SimResult

if TYPE_CHECKING:
    import pandas as pd

#: Engine rows always listed by :func:`engine_table`, even when idle (users ask "why is X idle").


def _busy_percent(busy_ns: float, latency_ns: float) -> float:
    return 100.0 * busy_ns / latency_ns if latency_ns > 0 else 0.0


def engine_table(result: SimResult) -> "pd.DataFrame":
    """Per-engine busy time: one row per compute engine row (plus "dma", all DMA engines).

    Columns: ``rows`` (engine rows the row stands for: 1, or ``config.dma_engines`` for "dma"),
    ``busy_ns`` (time the row was busy; for "dma" the mean over its queues, as
    ``summary()["busy_ns"]["dma"]``, so that every row's ``busy_ns`` is at most the latency),
    ``busy_percent`` (``busy_ns`` over the launch latency; for "dma" the DMA queue busy share,
    not bandwidth, see :func:`dma_table`), ``instructions`` (distinct instructions that ran
    there), ``events`` and one ``<opcode>_ns`` column per opcode (time that row spent on it;
    for "dma" the mean over its queues too). Index: the engine row name.
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
    table.insert(0, "rows", [result.config.dma_engines if r == "dma" else 1 for r in rows])
    timed = [c for c in table.columns if c == "busy_ns" or c.endswith("_ns")]
    table[timed] = table[timed].div(table["rows"], axis=0)  # dma: the mean over its queues
    table["busy_percent"] = [_busy_percent(b, latency) for b in table["busy_ns"]]
    table[["instructions", "events"]] = table[["instructions", "events"]].astype(int)
    order = ["rows", "busy_ns", "busy_percent", "instructions", "events"]
    table = table[order + [c for c in table.columns if c not in order]]
    table.index.name = "engine"
    return table


def dma_table(result: SimResult) -> "pd.DataFrame":
    """Per DMA engine traffic and bandwidth, plus a "total" row.

    Columns: ``bytes``, ``transfers``, ``avg_transfer_bytes``, ``busy_ns``,
    ``queue_busy_percent`` (busy time over the latency; total: averaged over the engines),
    ``bytes_per_ns`` (achieved: bytes over the launch latency), ``peak_bytes_per_ns`` (total:
    the summary's ``dma_peak_bytes_per_ns``, the peak for the launch's mix of HBM reads and
    other DMAs; one engine: that over ``config.dma_engines``) and ``bandwidth_percent_of_peak``.
    Index: "dma0" .. and "total".
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
    peak = result.summary()["dma_peak_bytes_per_ns"]
    table["peak_bytes_per_ns"] = peak / cfg.dma_engines
    total = pd.DataFrame({"bytes": [table["bytes"].sum()], "transfers": [table["transfers"].sum()],
                          "busy_ns": [table["busy_ns"].sum()],
                          "peak_bytes_per_ns": [peak]},
                         index=["total"])
    table = pd.concat([table, total])
    table["bytes"] = table["bytes"].astype(int)
    table["transfers"] = table["transfers"].astype(int)
    table["avg_transfer_bytes"] = table["bytes"] / table["transfers"].where(table["transfers"] > 0)
    engines = [1] * (len(table) - 1) + [cfg.dma_engines]
    table["queue_busy_percent"] = [_busy_percent(b / n, latency)
                                   for b, n in zip(table["busy_ns"], engines)]
    table["bytes_per_ns"] = table["bytes"] / latency if latency > 0 else 0.0
    table["bandwidth_percent_of_peak"] = (100.0 * table["bytes_per_ns"]
                                          / table["peak_bytes_per_ns"])
    table.index.name = "engine"
    return table[["bytes", "transfers", "avg_transfer_bytes", "busy_ns", "queue_busy_percent",
                  "bytes_per_ns", "peak_bytes_per_ns", "bandwidth_percent_of_peak"]]


def dma_line_table(result: SimResult) -> "pd.DataFrame":
    """DMA traffic per kernel source line: what each load or store moves and how well.

    Columns: ``tensors`` (the HBM tensors it reads or writes, else the tiles), ``dmas`` (DMA
    instructions), ``transfers``, ``bytes``, ``bytes_per_partition`` (per DMA instruction, on
    average), ``busy_ns`` (summed transfer time over the DMA engines), ``efficiency_percent``
    (bytes over what the engines could move in that time, at the rate of the DMA's direction,
    ``cost.dma_rate``; low when the per-descriptor floor dominates). Index: "file.py:LINE";
    heaviest (busy) first.
    """
    import pandas as pd

    cfg = result.config
    rows: dict[str, dict] = {}
    rate: dict[int, float] = {}  # DMA instruction -> the rate its engines move its bytes at
    for ins in result.program.instructions:
        if ins.opcode not in DMA_OPCODES:
            continue
        src, dst = ins.srcs.get("src"), ins.out
        rate[ins.id] = dma_rate(src.space if src is not None else MemSpace.SBUF, dst.space, cfg)
        hbm = [a.tensor.name for a in (src, dst) if a is not None and a.space is MemSpace.HBM]
        names = hbm or [a.tensor.name for a in (src, dst) if a is not None]
        row = rows.setdefault(str(ins.loc or ""), {"tensors": set(), "dmas": 0, "parts": 0})
        row["tensors"].update(names)
        row["dmas"] += 1
        row["parts"] += max(dst.partitions, 1)
    for e in result.timing.events if result.timing is not None else ():
        if is_dma_row(e.engine) and e.source in rows:
            row = rows[e.source]
            row["transfers"] = row.get("transfers", 0) + 1
            row["bytes"] = row.get("bytes", 0) + e.nbytes
            row["busy_ns"] = row.get("busy_ns", 0.0) + (e.end_ns - e.start_ns)
            row["ideal_ns"] = (row.get("ideal_ns", 0.0)
                               + e.nbytes / rate.get(e.instr_id, cfg.dma_engine_bytes_per_ns))
    table = pd.DataFrame([{
        "source": src, "tensors": ",".join(sorted(r["tensors"])), "dmas": r["dmas"],
        "transfers": r.get("transfers", 0), "bytes": r.get("bytes", 0),
        "bytes_per_partition": r.get("bytes", 0) / r["parts"] if r["parts"] else 0.0,
        "busy_ns": r.get("busy_ns", 0.0),
        "efficiency_percent": (100.0 * r.get("ideal_ns", 0.0) / r["busy_ns"]
                               if r.get("busy_ns") else 0.0),
    } for src, r in rows.items()], columns=["source", "tensors", "dmas", "transfers", "bytes",
                                            "bytes_per_partition", "busy_ns",
                                            "efficiency_percent"])
    return table.set_index("source").sort_values("busy_ns", ascending=False, kind="stable")


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


def memory_table(result: SimResult) -> "pd.DataFrame":
    """SBUF and PSUM use per allocation site (see :mod:`neuroncore_sim.timing.memory_use`).

    Columns: ``space`` ("sbuf"/"psum"), ``tiles`` (allocated at the site), ``tile_bytes``
    (bytes per partition of its largest tile; PSUM: whole banks), ``live_max`` (most of its
    tiles live at once), ``peak_bytes`` (its own peak bytes per partition in use),
    ``peak_percent`` (of the space's capacity), ``first_ns`` / ``last_ns`` (first use, last
    use). Index: the site ("file.py:LINE"); SBUF sites first, then PSUM, each by peak_bytes.
    """
    import pandas as pd

    lives = memory_use.tile_lives(result.program, result._timing(), result.config)
    by_site: dict[tuple[str, str], list[memory_use.TileLife]] = {}
    for x in lives:
        by_site.setdefault((x.space.value, x.site), []).append(x)
    rows = []
    for (space, site), group in by_site.items():
        ms = MemSpace(space)
        _, used = memory_use.usage_series(group, ms)
        top = max(x.bytes_per_partition for x in group)
        peak = int(used.max())
        rows.append({"site": site, "space": space, "tiles": len(group), "tile_bytes": top,
                     "live_max": _live_max(group), "peak_bytes": peak,
                     "peak_percent": 100.0 * peak / memory_use.capacity(ms, result.config),
                     "first_ns": min(x.start_ns for x in group),
                     "last_ns": max(x.end_ns for x in group)})
    columns = ["space", "tiles", "tile_bytes", "live_max", "peak_bytes", "peak_percent",
               "first_ns", "last_ns"]
    if not rows:
        return pd.DataFrame(columns=columns, index=pd.Index([], name="site"))
    table = pd.DataFrame(rows).set_index("site")
    order = {s.value: i for i, s in enumerate(memory_use.SPACES)}
    table = table.assign(_o=[order[v] for v in table["space"]])
    table = table.sort_values(["_o", "peak_bytes"], ascending=[True, False], kind="stable")
    return table[columns]


def _live_max(group: list[memory_use.TileLife]) -> int:
    """Most tiles of ``group`` live at once (a tile freed at t and one allocated at t: not)."""
    points = sorted([(x.start_ns, 1) for x in group] + [(x.end_ns, -1) for x in group])
    live = best = 0
    for _, d in points:  # at equal times -1 sorts first
        live += d
        best = max(best, live)
    return best


def memory_series(result: SimResult) -> "pd.DataFrame":
    """Bytes per partition in use over time: columns ``time_ns``, ``sbuf_bytes``,
    ``psum_bytes``; each row holds from its time until the next row's."""
    import numpy as np
    import pandas as pd

    lives = memory_use.tile_lives(result.program, result._timing(), result.config)
    series = {s: memory_use.usage_series(lives, s) for s in memory_use.SPACES}
    times = np.unique(np.concatenate([t for t, _ in series.values()]))
    cols = {"time_ns": times}
    for space, (t, used) in series.items():
        cols[f"{space.value}_bytes"] = used[np.searchsorted(t, times, side="right") - 1]
    return pd.DataFrame(cols)


def stall_table(result: SimResult, top: int = 10) -> "pd.DataFrame":
    """The ``top`` largest stall causes (:func:`neuroncore_sim.timing.analysis.top_stalls`).

    Columns: ``engine``, ``waited_on``, ``producer``, ``stall_ns``, ``count``,
    ``percent`` (of the latency).
    """
    import pandas as pd

    rows = analysis.top_stalls(result.program, result._timing(), top)
    table = pd.DataFrame(rows, columns=["engine", "waited_on", "producer", "stall_ns", "count"])
    table["percent"] = [_busy_percent(v, result.latency_ns) for v in table["stall_ns"]]
    return table


def summary_text(result: SimResult) -> str:
    """A readable multi-line summary: latency (ns, us, cycles of the named clock), roofline
    bound, bottleneck with its evidence, busy share per engine, MFU, DMA queue busy versus DMA
    and HBM bandwidth, peak SBUF/PSUM use, the largest stalls, the critical path, the bounds,
    how far to trust the estimate, advice and the most expensive source lines."""
    s = result.summary()
    cfg = result.config
    latency = s["latency_ns"]
    clock_ghz = cfg.tensor_clock_hz / 1e9
    busy = s["busy_percent"]
    lines = [
        f"kernel     : {result.program.name}"
        + (f" (grid {list(result.program.grid)})" if result.program.grid else ""),
        f"config     : {cfg.name}",
        f"latency    : {latency:,.0f} ns = {latency / 1000:,.2f} us = "
        f"{s['latency_tensor_cycles']:,.0f} cycles of the TensorE clock ({clock_ghz:g} GHz)",
        f"estimate   : {likely_text(latency, s['latency_band'])}",
        f"roofline   : {s['roofline_ns']:,.0f} ns ({s['roofline_limit']}); the estimate is "
        f"{s['latency_over_roofline']:.2f}x the bound ({s['roofline_percent']:.0f}% of roofline)",
        f"bottleneck : {s['bottleneck']}  ({s['bottleneck_evidence']['reason']})",
        "busy       : " + ", ".join(f"{row} {busy[row]:.1f}%" for row in MAIN_ENGINES)
        + f", dma queues {s['dma_queue_busy_percent']:.1f}%",
        f"matmul     : {s['matmul_flops']:,} FLOPs, {s['achieved_tflops']:.2f} TFLOPS, "
        f"MFU {s['mfu_percent']:.1f}% (of the TensorE peak for the operand dtypes)",
    ]
    n_instr = sum(s["instructions"].values())
    lines.append(f"instructions: {n_instr} ("
                 + ", ".join(f"{k} {v}" for k, v in sorted(s["instructions"].items())) + ")")
    lines.append(f"dma        : {s['dma_bytes']:,} bytes in {s['dma_transfers']} transfers, "
                 f"{s['dma_bytes_per_ns']:.1f} B/ns = bandwidth "
                 f"{s['dma_bandwidth_percent_of_peak']:.0f}% of peak {s['dma_peak_bytes_per_ns']:.1f}"
                 f" B/ns (dma_engines {cfg.dma_engines}, HBM reads at dma_hbm_read_bytes_per_ns "
                 f"{cfg.dma_hbm_read_bytes_per_ns:g}, writes at dma_hbm_write_bytes_per_ns "
                 f"{cfg.dma_hbm_write_bytes_per_ns:g}, on-chip copies at dma_engine_bytes_per_ns "
                 f"{cfg.dma_engine_bytes_per_ns:g}); queues busy "
                 f"{s['dma_queue_busy_percent']:.1f}%")
    lines.append(f"hbm        : {s['hbm_bytes']:,} bytes read + written, "
                 f"{s['hbm_bytes_per_ns']:.1f} B/ns = {s['hbm_bandwidth_percent_of_peak']:.0f}% "
                 f"of peak {s['hbm_peak_bytes_per_ns']:g} B/ns (hbm_bytes_per_ns)")
    lines.append("memory     : " + "; ".join(
        _memory_text(name, m) for name, m in s["memory"].items()))
    for i, stall in enumerate(s["top_stalls"][:3]):
        lines.append(("stalls     : " if i == 0 else " " * 13) + analysis.stall_text(stall))
    lines += _critical_path_text(s["critical_path"], latency)
    lines += _bounds_text(s)
    lines += _trust_text(s["trust"])
    for i, tip in enumerate(advice(result, s)):
        lines.append(("advice     : " if i == 0 else " " * 13) + tip.text)
    top = source_table(result).head(3)
    if len(top):
        lines.append("top lines  : " + "; ".join(
            f"{src or '?'} {row.percent:.0f}%" for src, row in top.iterrows())
            + " (of all engine time, each DMA queue's counted)")
    return "\n".join(lines) + "\n"


def _critical_path_text(cp: dict, latency: float) -> list[str]:
    """The critical path: time per engine on it, then its largest waits and their root causes."""
    shares = sorted(cp["by_engine_ns"].items(), key=lambda kv: -kv[1])
    lines = ["critical   : " + ", ".join(
        f"{row} {_busy_percent(ns, latency):.0f}%" for row, ns in shares)
        + f" of the latency ({cp['steps']} steps; waiting {_busy_percent(cp['wait_ns'], latency):.0f}%)"]
    for stall in cp["top_stalls"][:2]:
        lines.append(" " * 13 + f"{stall['engine']} waited {stall['wait_ns'] / 1000:,.2f} us at "
                     f"{stall['source'] or '?'} ({stall['opcode']}) for {stall['waited_on']}; "
                     f"root cause: {stall['root_engine']} ({stall['root_opcode']} at "
                     f"{stall['root_source'] or '?'})")
    return lines


def _bounds_text(s: dict) -> list[str]:
    """Neuron Explorer's bounds, by family, with the speed-up each leaves."""
    def one(name: str) -> str:
        return f"{name} {s[name] / 1000:,.2f} us (x{s['bn_speedup'][name]:.2f})"

    return ["bounds     : " + "; ".join(one(n) for n in (
                "memory_bound", "memory_bound_ideal", "memory_bound_ideal_no_reloads")),
            " " * 13 + "; ".join(one(n) for n in (
                "compute_bound", "compute_bound_ideal_flops",
                "compute_bound_ideal_useful_flops")),
            " " * 13 + one("perfect_pipeline") + f" ({s['pipeline_bottleneck']})"]


def _trust_text(trust: dict) -> list[str]:
    """How far to trust the estimate: the mechanisms behind the critical path (docs/model.md)."""
    def one(m: dict) -> str:
        return f"{m['mechanism']} {m['percent']:.0f}% ({m['basis']})"

    lines = ["trust      : " + f"{100 - trust['approximated_percent']:.0f}% of the critical path "
             "rests on documented or measured mechanisms; approximated: "
             + ("; ".join(one(m) for m in trust["approximated"]) or "none")]
    lines.append(" " * 13 + "dominant: " + "; ".join(one(m) for m in trust["dominant"]))
    return lines


def _memory_text(name: str, m: dict) -> str:
    text = (f"{name.upper()} peak {m['peak_bytes_per_partition']:,} of "
            f"{m['capacity_bytes_per_partition']:,} B/partition ({m['peak_percent']:.1f}%)")
    if m["peak_bytes_per_partition"]:
        text += f" at {m['peak_at_ns'] / 1000:,.2f} us"
        sites = list(m["peak_sites"].items())
        if sites:
            text += " (" + ", ".join(f"{site} {b:,}" for site, b in sites) + ")"
    if m.get("spill_save_bytes") or m.get("spill_reload_bytes"):  # the compiler spilled (docs/model.md, "Spilling")
        to = "HBM" if name == "sbuf" else "SBUF"
        text += (f", spilled to {to}: {m['spill_save_bytes']:,} bytes saved, "
                 f"{m['spill_reload_bytes']:,} reloaded")
    return text


def full_text(result: SimResult) -> str:
    """:func:`summary_text` followed by the engine, DMA total, DMA per line, stall, memory and
    source-line tables: the ``summary.txt`` of a report folder."""
    import pandas as pd

    queues = result.config.dma_engines
    parts = [summary_text(result).rstrip("\n"),
             f"per engine (busy_ns and <opcode>_ns: time the row was busy; dma: the mean over "
             f"its {queues} queues, as summary.json's busy_ns.dma):\n"
             + engine_table(result).to_string(),
             f"dma (all engines; busy_ns summed over the {queues} queues, queue_busy_percent "
             "their mean):\n" + dma_table(result).loc[["total"]].to_string(),
             f"dma per source line (heaviest first; busy_ns summed over the {queues} queues):\n"
             + dma_line_table(result).head(10).round(1).to_string(),
             "stalls:\n" + stall_table(result).to_string(index=False),
             "memory per allocation site:\n" + memory_table(result).to_string(),
             f"per source line (busy_ns: engine time summed over all rows, each of the {queues} "
             "DMA queues counted; percent: of all engine time):\n"
             + source_table(result).to_string()]
    with pd.option_context("display.width", 160, "display.max_columns", 20):
        return "\n\n".join(parts) + "\n"
