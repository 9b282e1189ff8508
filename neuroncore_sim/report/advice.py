"""What to try next: up to three concrete suggestions per launch, naming source lines.

Each rule reads the critical path, Neuron Explorer's bounds and the events, fires only where its
pattern costs a measurable share of the latency, and estimates the time at stake
(``saving_ns``: an upper bound, like the bounds' gaps, not a prediction). The rules:

- ``small_dma``: DMA on the critical path, and lines whose DMAs move few bytes per partition
  at a low share of the DMA engines' peak (each DMA's fixed latency dominates its transfers);
- ``reloads``: the same HBM region loaded several times while DMA is on the critical path;
- ``dependent_chain``: one compute engine holds most of the critical path, each instruction
  waiting on the one before it on that engine;
- ``serialized_engines``: the engines wait on each other: perfect overlap would be much faster;
- ``stationary_waits``: TensorE's LoadStationary on the critical path waits, again and
  again, for the DMA that brings its stationary operand;
- ``transposes``: a large share of TensorE's FLOPs are transposes;
- ``ordered_triggers``: DMAs on the critical path held behind the DMA triggers before them in
  their iteration (a store waiting for its data holds up the next loads: a Python or
  ``sequential_range`` loop, compiler/dma_triggers.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..dtypes import dtype_name
from ..program.ir import DMA_OPCODES, Engine, MemSpace, Opcode
from ..timing.cost import dma_rate
from ..timing.critical_path import CriticalPath, critical_path
from ..timing.events import LOAD_STATIONARY, is_dma_row

if TYPE_CHECKING:
    from ..result import SimResult

#: A pattern must cost at least this share of the latency for its rule to fire.
MIN_SHARE = 0.10
#: DMAs moving fewer bytes per partition than this are small ([ARCH]: < 2 KiB inefficient).
SMALL_DMA_BYTES_PER_PARTITION = 2048
#: ... and are flagged when they reach less than this share of the engines' peak.
SMALL_DMA_EFFICIENCY = 0.5
#: Most suggestions a launch gets.
MAX_ADVICE = 3


@dataclass(frozen=True)
class Advice:
    """One suggestion: the rule, the text, the lines it names, the time at stake (ns)."""

    rule: str
    text: str
    lines: tuple[str, ...]
    saving_ns: float

    def as_dict(self) -> dict[str, Any]:
        return {"rule": self.rule, "text": self.text, "lines": list(self.lines),
                "saving_ns": round(self.saving_ns, 3)}


def _us(ns: float) -> str:
    return f"{ns / 1000:,.2f} us"


def _path_share(path: CriticalPath, row: str) -> float:
    return path.by_row().get(row, 0.0) / path.latency_ns if path.latency_ns > 0 else 0.0


def _small_dma(res: SimResult, path: CriticalPath, s: dict) -> list[Advice]:
    if _path_share(path, "dma") < MIN_SHARE * 3:
        return []
    cfg = res.config
    # Per DMA instruction: its bytes, the engine time of its slowest transfer, its partitions.
    per_dma: dict[int, list[float]] = {}
    for e in res.timing.events:
        if is_dma_row(e.engine):
            acc = per_dma.setdefault(e.instr_id, [0.0, 0.0])
            acc[0] += e.nbytes
            acc[1] = max(acc[1], e.end_ns - e.start_ns)
    # line -> [bytes, time of its DMAs (fixed latency + slowest transfer), ideal time, parts,
    # count]; the ideal moves the bytes on every DMA engine at the rate of the DMA's direction
    # (cost.dma_rate: HBM reads, HBM writes, on-chip copies).
    per_line: dict[str, list[float]] = {}
    for ins in res.program.instructions:
        if ins.opcode in DMA_OPCODES and ins.id in per_dma:
            nbytes, slowest = per_dma[ins.id]
            rate = dma_rate(ins.srcs["src"].space, ins.out.space, cfg)
            acc = per_line.setdefault(str(ins.loc or ""), [0.0, 0.0, 0.0, 0.0, 0.0])
            acc[0] += nbytes
            acc[1] += cfg.dma_fixed_latency_ns + slowest
            acc[2] += nbytes / (cfg.dma_engines * rate)
            acc[3] += max(ins.out.partitions, 1)
            acc[4] += 1
    found = []  # (time lost, line, bytes per partition, efficiency)
    for line, (nbytes, ns, ideal, parts, count) in per_line.items():
        if not count or ns <= 0:
            continue
        per_partition = nbytes / parts
        efficiency = ideal / ns
        # The fixed cost of many small DMAs overlaps on the 16 engines' queues.
        lost = (ns - ideal) / cfg.dma_engines
        if (per_partition < SMALL_DMA_BYTES_PER_PARTITION and efficiency < SMALL_DMA_EFFICIENCY
                and lost >= MIN_SHARE * res.latency_ns):
            found.append((lost, line, per_partition, efficiency))
    if not found:
        return []
    found.sort(key=lambda f: (-f[0], f[1]))
    lost, line, per_partition, efficiency = found[0]
    others = [f[1] for f in found[1:3]]
    return [Advice(
        "small_dma", f"the DMAs at {line} move {per_partition:,.0f} B per partition each, at "
        f"{100 * efficiency:.0f}% of the DMA engines' peak"
        + (f" (also {', '.join(others)})" if others else "")
        + f": move wider tiles (at least {SMALL_DMA_BYTES_PER_PARTITION:,} B per partition per "
        "DMA)", (line, *others), sum(f[0] for f in found[:3]))]


def _reloads(res: SimResult, path: CriticalPath, s: dict) -> list[Advice]:
    # Reloaded bytes are HBM reads: at dma_hbm_read_bytes_per_ns, not the engines' write peak.
    # The kernel's own DMA bytes (dma_bytes), not memory_bound_ideal's: spills are not reloads.
    cfg = res.config
    extra = ((s["dma_bytes"] - s["necessary_bytes"])
             / (cfg.dma_engines * cfg.dma_hbm_read_bytes_per_ns))
    if _path_share(path, "dma") < MIN_SHARE * 3 or extra < MIN_SHARE * res.latency_ns:
        return []
    loads: dict[tuple, list] = {}  # (tensor, region) -> [count, bytes, lines]
    ran = res.timing.instruction_end_ns  # (a load the compiler dropped as a repeat never ran)
    for ins in res.program.instructions:
        src = ins.srcs.get("src") if ins.opcode in DMA_OPCODES else None
        if src is None or src.space is not MemSpace.HBM or ins.id not in ran:
            continue
        key = (src.tensor.id, src.offset, src.pattern)
        entry = loads.setdefault(key, [0, src.nbytes, set(), src.tensor.name])
        entry[0] += 1
        entry[2].add(str(ins.loc or ""))
    repeated = [(count - 1) * nbytes for count, nbytes, _, _ in loads.values() if count > 1]
    if not repeated:
        return []
    worst = max((v for v in loads.values() if v[0] > 1), key=lambda v: (v[0] - 1) * v[1])
    count, nbytes, lines, name = worst
    lines = tuple(sorted(lines))
    return [Advice(
        "reloads", f"{', '.join(lines)} load the same region of {name} {count} times "
        f"({(count - 1) * nbytes:,} B more than once; {_us(extra)} of HBM reads): keep it in "
        "SBUF across the loop (hoist the load out of it)", lines, extra)]


def _dependent_chain(res: SimResult, path: CriticalPath, s: dict) -> list[Advice]:
    shares = path.by_row()
    row = max(shares, key=lambda r: shares[r], default=None)
    if row is None or row == "dma" or shares[row] < 0.5 * path.latency_ns:
        return []
    steps = [st for st in path.steps if st.event.engine == row]
    chained = [st for st in steps if st.why.startswith(f"{row}#")]
    if len(steps) < 4 or len(chained) < 0.8 * len(steps):
        return []
    wait = sum(st.wait_ns for st in chained)
    work = sum(st.event.end_ns - st.event.start_ns for st in steps)
    if wait < MIN_SHARE * res.latency_ns:
        return []
    lines = tuple(sorted({st.event.source for st in chained}))[:3]
    return [Advice(
        "dependent_chain", f"{row} runs a chain of {len(steps)} dependent instructions "
        f"({', '.join(lines)}): each waits on the one before it ({_us(wait)} of waits for "
        f"{_us(work)} of work); interleave independent tiles (several tiles per iteration) or "
        "make each instruction process more data", lines, wait)]


def _serialized(res: SimResult, path: CriticalPath, s: dict) -> list[Advice]:
    gap = res.latency_ns - s["perfect_pipeline"]
    if s["bn_speedup"]["perfect_pipeline"] < 1.5 or gap < MIN_SHARE * res.latency_ns:
        return []
    stalls = s["critical_path"]["top_stalls"]
    lines = tuple(dict.fromkeys(st["source"] for st in stalls if st["source"]))[:3]
    return [Advice(
        "serialized_engines", f"the engines wait on each other: with perfect overlap the launch "
        f"would take {_us(s['perfect_pipeline'])} ({s['pipeline_bottleneck']} bound) instead of "
        f"{_us(res.latency_ns)}; overlap loads, compute and stores across iterations (allocate "
        "tiles inside an nl.affine_range loop so they get several buffers)"
        + (f"; largest waits at {', '.join(lines)}" if lines else ""), lines, gap)]


def _stationary_waits(res: SimResult, path: CriticalPath, s: dict) -> list[Advice]:
    steps = path.steps
    late = [(prev, st) for prev, st in zip(steps, steps[1:])
            if st.event.opcode == LOAD_STATIONARY and st.why.startswith("dma#")]
    # the stationary's load (and what it waited for) sits on the path before each of them
    wait = sum(st.wait_ns + prev.wait_ns + prev.event.end_ns - prev.event.start_ns
               for prev, st in late)
    if len(late) < 3 or wait < MIN_SHARE * res.latency_ns:
        return []
    loads = tuple(sorted({prev.event.source for prev, _ in late}))[:3]
    matmuls = tuple(sorted({st.event.source for _, st in late}))[:3]
    return [Advice(
        "stationary_waits", f"TensorE waits {len(late)} times for the stationary operand of "
        f"{', '.join(matmuls)}, loaded at {', '.join(loads)} ({_us(wait)} of loading on the "
        "critical path): load the stationary tiles before the loop (hoist them) or an iteration "
        "ahead into a second buffer, and reuse each for several moving tiles", loads + matmuls,
        wait)]


def _transposes(res: SimResult, path: CriticalPath, s: dict) -> list[Advice]:
    hw, tr = s["hardware_flops"], s["transpose_flops"]
    if not hw or tr < 0.25 * hw:
        return []
    ns = sum(e.end_ns - e.start_ns for e in res.timing.events
             if e.engine == "tensor" and e.opcode == Opcode.NC_TRANSPOSE.value)
    if ns < MIN_SHARE * res.latency_ns:
        return []
    lines = tuple(sorted({e.source for e in res.timing.events
                          if e.opcode == Opcode.NC_TRANSPOSE.value}))[:3]
    fp32 = sum(ins.opcode is Opcode.NC_TRANSPOSE and ins.engine is Engine.TENSOR
               and dtype_name(ins.srcs["data"].dtype) == "float32"
               for ins in res.program.instructions)
    # (an fp32 transpose runs the fp32 matmul's four passes: timing/cost.py)
    cast = (f"; {fp32} of them move fp32 data at four TensorE passes each: cast the tile to "
            "bf16 first (nisa.tensor_copy(..., dtype=nl.bfloat16)) where bf16 precision is "
            "enough" if fp32 else "")
    return [Advice(
        "transposes", f"{100 * tr / hw:.0f}% of TensorE's FLOPs are transposes "
        f"({', '.join(lines)}, {_us(ns)}): load the operand already transposed "
        f"(nl.load_transpose2d, or another layout in HBM) or transpose once and keep it{cast}",
        lines, ns)]


def _ordered_triggers(res: SimResult, path: CriticalPath, s: dict) -> list[Advice]:
    held = res.timing.trigger_held_ns
    if not held:
        return []
    # What the order costs on the path: each held DMA's wait and transfer there, which an
    # issue as early as its data allowed would overlap with the work before it.
    steps = [st for st in path.steps
             if is_dma_row(st.event.engine) and st.event.instr_id in held]
    wait = sum(st.wait_ns + st.event.end_ns - st.event.start_ns for st in steps)
    if wait < MIN_SHARE * res.latency_ns:
        return []
    count = len({st.event.instr_id for st in steps})
    lines = tuple(sorted({st.event.source for st in steps}))[:3]
    return [Advice(
        "ordered_triggers", f"{count} DMAs on the critical path ({', '.join(lines)}) are held "
        "behind the DMA before them in program order, a store waiting for its data holding up "
        f"the loads after it ({_us(wait)} of DMA on the path; the compiler keeps one "
        "iteration's DMA order): make the loop an nl.affine_range if its iterations are "
        "independent, so the next iteration's loads are issued before this one's store, or "
        "load a tile ahead, before the store", lines, wait)]


RULES = (_small_dma, _reloads, _dependent_chain, _serialized, _stationary_waits, _transposes,
         _ordered_triggers)


def advice(res: SimResult, summary: dict | None = None) -> list[Advice]:
    """Up to :data:`MAX_ADVICE` suggestions for a timed launch, most time at stake first."""
    s = res.summary() if summary is None else summary
    path = critical_path(res.timing)
    found = [a for rule in RULES for a in rule(res, path, s)]
    return sorted(found, key=lambda a: -a.saving_ns)[:MAX_ADVICE]
