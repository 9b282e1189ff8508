"""What limits a simulated launch: the roofline bound, MFU, bandwidth use, the bottleneck
verdict with the numbers that decided it, and the stalls that cost the most.

Plain functions from a :class:`~neuroncore_sim.timing.events.TimingResult` (and the Program, for
naming producers) to JSON-ready dicts; :meth:`SimResult.summary` merges them. Definitions:

* **Roofline bound**: the largest of these lower bounds on the latency (``roofline_terms_ns``):

  - ``tensor_flops``: useful matmul FLOPs at the TensorE peak for their dtype
    (:attr:`KernelWork.matmul_peak_ns`);
  - ``dma_bandwidth``: DMA bytes at the DMA engines' rates, over all ``dma_engines``: bytes of
    DMAs that read HBM at ``dma_hbm_read_bytes_per_ns``, that write it at
    ``dma_hbm_write_bytes_per_ns``, on-chip copies at ``dma_engine_bytes_per_ns``
    (``cost.dma_engines_ns``);
  - ``hbm_bandwidth``: HBM bytes (read plus written) at ``hbm_bytes_per_ns``;
  - ``<engine>_work`` for tensor, vector, scalar, gpsimd, sync: the engine's summed occupancy.
    Each engine runs its instructions one at a time and each occupies it for its cost formula,
    which does not depend on the schedule, so the launch cannot be shorter than that sum.

* **MFU** (model FLOPs utilisation): useful FLOPs (``2*K*M*N`` per nc_matmul) over what the
  TensorE peak could do in the latency, i.e. ``tensor_flops / latency``.
* **Bandwidth**: bytes over the latency against a named peak (DMA engines: the peak for the
  kernel's mix of HBM reads and other DMAs, :func:`dma_peak_bytes_per_ns`; HBM). This is not the
  DMA queue busy share: a DMA engine is busy during per-buffer overheads and HBM waits too.
* **Bottleneck**: the busiest of tensor / vector / scalar / gpsimd / dma (the DMA engines'
  average busy share) when it is busy more than half the latency, else "latency".
* **Stalls**: time an in-order compute engine sat idle before an instruction because of what
  its ``Event.waited_on`` names (the producer that finished last, a shared SRAM port, or the
  matmul's own LoadStationary), summed per (engine, cause, producer line) and ranked.
"""

from __future__ import annotations

from typing import Any

from ..config import NeuronCoreConfig
from .cost import KernelWork, dma_engines_ns
from .events import COMPUTE_ROWS, LOAD_STATIONARY, Event, TimingResult
from ..program.ir import Program

#: Below this busy share of every engine and of the DMA engines, a kernel is latency-bound.
LATENCY_BOUND_BUSY_FRACTION = 0.5
#: Rows that can be "the bottleneck" (dma = the DMA engines' average busy share).
BOTTLENECK_CANDIDATES = ("tensor", "vector", "scalar", "gpsimd", "dma")
#: How many stall causes :func:`top_stalls` keeps by default.
TOP_STALLS = 5
_TIE = 1e-9


def _pct(part: float, whole: float) -> float:
    return 100.0 * part / whole if whole > 0 else 0.0


def dma_peak_bytes_per_ns(config: NeuronCoreConfig, work: KernelWork | None = None) -> float:
    """Peak bandwidth of all DMA engines for ``work``'s mix of DMAs: its bytes over the time
    the engines need to move them at their rates (:func:`.cost.dma_rate` by direction;
    :func:`.cost.dma_engines_ns`). With no ``work`` (or no bytes): ``dma_engines x
    dma_engine_bytes_per_ns``, the peak of on-chip copies. A kernel that only loads from HBM
    peaks at ``dma_engines x dma_hbm_read_bytes_per_ns`` (272 B/ns on trn1)."""
    if work is not None and work.dma_bytes > 0:
        return work.dma_bytes / dma_engines_ns(work, config)
    return config.dma_engines * config.dma_engine_bytes_per_ns


def roofline(timing: TimingResult, config: NeuronCoreConfig) -> dict[str, Any]:
    """Roofline bound, its terms, and how far the latency is from it.

    Returns:
        ``roofline_ns`` (the bound), ``roofline_limit`` (name of the largest term),
        ``roofline_terms_ns`` (every term, see the module docstring),
        ``latency_over_roofline`` (latency / bound, >= 1) and ``roofline_percent``
        (bound / latency, in %: how close the estimate is to the bound).
    """
    w = timing.work
    terms = {"tensor_flops": w.matmul_peak_ns,
             "dma_bandwidth": dma_engines_ns(w, config),
             "hbm_bandwidth": w.hbm_bytes / config.hbm_bytes_per_ns}
    for row in COMPUTE_ROWS:
        terms[f"{row}_work"] = timing.busy_ns.get(row, 0.0)
    bound = max(terms.values())
    # Equal terms (up to float rounding of sums) name the first: the hardware peaks first.
    limit = next(k for k, v in terms.items() if v >= bound * (1 - _TIE))
    latency = timing.latency_ns
    return {"roofline_ns": bound, "roofline_limit": limit, "roofline_terms_ns": terms,
            "latency_over_roofline": latency / bound if bound > 0 else 0.0,
            "roofline_percent": _pct(bound, latency)}


def utilisation(timing: TimingResult, config: NeuronCoreConfig,
                dma_queue_busy_percent: float) -> dict[str, Any]:
    """MFU and bandwidth use against the named peaks (see the module docstring)."""
    w, latency = timing.work, timing.latency_ns
    dma_rate = w.dma_bytes / latency if latency > 0 else 0.0
    hbm_rate = w.hbm_bytes / latency if latency > 0 else 0.0
    return {
        "matmul_flops": w.matmul_flops,
        "achieved_tflops": w.matmul_flops / latency / 1000.0 if latency > 0 else 0.0,
        "mfu_percent": _pct(w.matmul_peak_ns, latency),
        "dma_queue_busy_percent": dma_queue_busy_percent,
        "dma_bandwidth_percent_of_peak": _pct(dma_rate, dma_peak_bytes_per_ns(config, w)),
        "dma_peak_bytes_per_ns": dma_peak_bytes_per_ns(config, w),
        "hbm_bytes": w.hbm_bytes,
        "hbm_bytes_per_ns": hbm_rate,
        "hbm_bandwidth_percent_of_peak": _pct(hbm_rate, config.hbm_bytes_per_ns),
        "hbm_peak_bytes_per_ns": config.hbm_bytes_per_ns,
    }


def bottleneck(busy_percent: dict[str, float], stalls: list[dict[str, Any]],
               dma_bandwidth_percent: float) -> tuple[str, dict[str, Any]]:
    """The verdict and its evidence: the candidates' busy shares (ranked), the threshold, and a
    sentence giving the deciding numbers.

    Args:
        busy_percent: busy share of the latency per row ("dma": the DMA engines' average).
        stalls: :func:`top_stalls` output (quoted for a latency-bound verdict).
        dma_bandwidth_percent: achieved DMA bandwidth, % of peak (quoted for a DMA verdict).
    """
    ranked = sorted(BOTTLENECK_CANDIDATES,
                    key=lambda r: (-busy_percent.get(r, 0.0), BOTTLENECK_CANDIDATES.index(r)))
    top, second = ranked[0], ranked[1]
    top_pct, second_pct = busy_percent.get(top, 0.0), busy_percent.get(second, 0.0)
    threshold = 100.0 * LATENCY_BOUND_BUSY_FRACTION
    name = "dma queues" if top == "dma" else top
    if top_pct > threshold:
        verdict = top
        reason = (f"{name} busy {top_pct:.1f}% of the latency > {threshold:.0f}%; "
                  f"next busiest {second} {second_pct:.1f}%")
        if top == "dma":
            reason += f"; DMA bandwidth {dma_bandwidth_percent:.0f}% of peak"
    else:
        verdict = "latency"
        reason = (f"no engine busy more than {threshold:.0f}% of the latency: busiest is "
                  f"{name} at {top_pct:.1f}%")
        if stalls:
            reason += f"; largest stall: {stall_text(stalls[0])}"
    evidence = {"threshold_percent": threshold, "busiest": top, "busiest_percent": top_pct,
                "runner_up": second, "runner_up_percent": second_pct,
                "busy_percent": {r: busy_percent.get(r, 0.0) for r in ranked},
                "reason": reason}
    return verdict, evidence


def _instance_starts(events: tuple[Event, ...]) -> dict[int, float]:
    """Start of each SPMD instance: instances run one after another, so instance k starts
    when every earlier one has ended."""
    last: dict[int, float] = {}
    for e in events:
        last[e.instance] = max(last.get(e.instance, 0.0), e.end_ns)
    starts, t = {}, 0.0
    for k in sorted(last):
        starts[k] = t
        t = max(t, last[k])
    return starts


def _cause(waited_on: str, program: Program, row: str, source: str,
           added: dict[int, tuple[str, str]]) -> tuple[str, str]:
    """(what the engine waited on, the producer "opcode at file.py:LINE" or ""). ``added``:
    instruction id -> (event opcode, source) of the instructions the timing model added
    (spill copies, ids after the Program's)."""
    queue, sep, ident = waited_on.partition("#")
    if sep and ident.isdigit() and int(ident) < len(program.instructions):
        ins = program.instructions[int(ident)]
        where = str(ins.loc) if ins.loc is not None else "?"
        return queue, f"{ins.opcode.value} at {where}"
    if sep and ident.isdigit() and int(ident) in added:
        opcode, where = added[int(ident)]
        return queue, f"{opcode} at {where or '?'}"
    if waited_on == LOAD_STATIONARY:  # the matmul's own stationary load
        return "tensor_ls", f"{LOAD_STATIONARY} at {source or '?'}"
    return waited_on, ""


def top_stalls(program: Program, timing: TimingResult, top: int = TOP_STALLS
               ) -> list[dict[str, Any]]:
    """The largest causes of idle time of the in-order compute engines, most costly first.

    An engine's stall before an event is ``start - max(end of its previous event, start of the
    instance)`` when the event names a ``waited_on`` cause (the timing model attributes the whole
    wait to the producer that became visible last).

    Returns:
        up to ``top`` dicts: ``engine``, ``waited_on`` (a row such as "dma" or "vector", a port
        "port:sbuf" / "port:psum", or "tensor_ls"), ``producer`` ("dma_copy at k.py:14", or ""),
        ``stall_ns`` (summed) and ``count`` (instructions delayed).
    """
    starts = _instance_starts(timing.events)
    prev_end: dict[tuple[str, int], float] = {}
    totals: dict[tuple[str, str, str], list[float]] = {}
    n = len(program.instructions)
    added = {e.instr_id: (e.opcode, e.source) for e in timing.events if e.instr_id >= n}
    for e in timing.events:
        if e.engine not in COMPUTE_ROWS:
            continue
        key = (e.engine, e.instance)
        free = max(prev_end.get(key, 0.0), starts[e.instance])
        prev_end[key] = e.end_ns
        if not e.waited_on or e.start_ns <= free:
            continue
        what, producer = _cause(e.waited_on, program, e.engine, e.source, added)
        acc = totals.setdefault((e.engine, what, producer), [0.0, 0])
        acc[0] += e.start_ns - free
        acc[1] += 1
    ranked = sorted(totals.items(), key=lambda kv: (-kv[1][0], kv[0]))
    return [{"engine": eng, "waited_on": what, "producer": producer, "stall_ns": ns,
             "count": int(n)} for (eng, what, producer), (ns, n) in ranked[:top]]


def stall_text(stall: dict[str, Any]) -> str:
    """One stall as a sentence: "vector waited 12.3 us on dma (dma_copy at k.py:14), 8x"."""
    producer = f" ({stall['producer']})" if stall["producer"] else ""
    return (f"{stall['engine']} waited {stall['stall_ns'] / 1000:.2f} us on "
            f"{stall['waited_on']}{producer}, {stall['count']}x")
