"""How far to trust an estimate: the modelled mechanisms that set a launch's latency.

Every segment of the critical path (:mod:`.critical_path`: an event's time, or the wait before
it) is charged to the mechanism of the model that produced it, and each mechanism says what it
rests on (``docs/model.md``):

- ``documented``: a formula or constant of AWS's docs (an instruction's cost formula, the
  number of DMA engines and their HBM read rate, port sharing);
- ``measured``: one published hardware measurement taken as is (the DMA engine write rate);
- ``fitted``: a global parameter fitted on published measurements (the pipeline latencies and
  the semaphore wait between dependent instructions);
- ``assumption``: our choice where the docs are silent (which tiles the compiler spills and when
  it reloads them, loop-invariant code motion, PSUM-zeroing folded into matmuls).

The summary's ``trust`` entry lists the mechanisms with the largest share of the critical path
and those that are only approximated (fitted or assumed), with their shares: an estimate that
rests mostly on documented formulas is more trustworthy than one dominated by spills.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..program.ir import Instruction, MemSpace
from .cost import dma_direction
from .critical_path import CriticalPath, Step
from .events import (LOAD_STATIONARY, PSUM_SPILL_RELOAD, PSUM_SPILL_SAVE, SPILL_RELOAD,
                     SPILL_REMAT, SPILL_SAVE, is_dma_row)

#: How many dominant mechanisms the summary lists.
TOP = 3
#: Bases that are not the docs' own numbers.
APPROXIMATE = ("fitted", "assumption")


@dataclass(frozen=True)
class Mechanism:
    """One mechanism of the timing model.

    Attributes:
        name: what it is, as the summary shows it.
        basis: "documented", "measured", "fitted" or "assumption" (module docstring).
        where: the section of docs/model.md that describes it.
    """

    name: str
    basis: str
    where: str


TENSOR_COST = Mechanism("TensorE instruction costs (nc_matmul, transpose)", "documented",
                        "TensorE")
ENGINE_COST = Mechanism("Vector/Scalar/GpSimd instruction cost formulas", "documented",
                        "Engines")
DMA_READ = Mechanism("DMA engine rate reading HBM (dma_hbm_read_bytes_per_ns)", "documented",
                     "Compile stage")
DMA_WRITE = Mechanism("DMA engine rate writing HBM (dma_hbm_write_bytes_per_ns)", "documented",
                      "DMA")
DMA_COPY = Mechanism("DMA engine rate copying on chip (dma_engine_bytes_per_ns)", "measured",
                     "DMA")
DMA_START = Mechanism("DMA descriptor-to-start latency (dma_fixed_latency_ns)", "measured", "DMA")
DEPENDENCY = Mechanism("pipeline latency and semaphore wait of dependent instructions",
                       "fitted", "Dependent instructions")
PORT = Mechanism("SBUF/PSUM ports shared by VectorE, GpSimd and ScalarE", "documented",
                 "Port sharing")
SPILL = Mechanism("compiler spills and reloads (which tiles, when)", "assumption", "Spilling")
QUEUE = Mechanism("an engine busy with earlier instructions (in-order queues)", "documented",
                  "Engines")


#: The mechanism of a DMA row's time, by :func:`.cost.dma_direction`.
_DMA_MECHANISMS = {"read": DMA_READ, "write": DMA_WRITE, "copy": DMA_COPY}


def _busy_mechanism(step: Step, by_id: dict[int, Instruction]) -> Mechanism:
    """The mechanism behind an event's own time."""
    e = step.event
    if e.opcode in (SPILL_SAVE, SPILL_RELOAD, PSUM_SPILL_SAVE, PSUM_SPILL_RELOAD, SPILL_REMAT):
        return SPILL
    if is_dma_row(e.engine):
        ins = by_id.get(e.instr_id)
        if ins is None:
            return DMA_COPY
        src = ins.srcs.get("src")
        direction = dma_direction(src.tensor.space if src is not None else MemSpace.SBUF,
                                  ins.out.tensor.space)
        return _DMA_MECHANISMS[direction]
    if e.engine in ("tensor", "tensor_ls"):
        return TENSOR_COST
    return ENGINE_COST


def _wait_mechanism(step: Step) -> Mechanism:
    """The mechanism behind the wait before an event."""
    why = step.why
    if why.startswith("port:"):
        return PORT
    if is_dma_row(step.event.engine):
        return DMA_START
    if why == LOAD_STATIONARY or why in ("engine", "start", "instance"):
        return QUEUE
    return DEPENDENCY


def shares(path: CriticalPath, instructions: list[Instruction]) -> dict[Mechanism, float]:
    """Mechanism -> time (ns) of the critical path charged to it."""
    by_id = {ins.id: ins for ins in instructions}
    out: dict[Mechanism, float] = {}
    for s in path.steps:
        m = _busy_mechanism(s, by_id)
        out[m] = out.get(m, 0.0) + (s.event.end_ns - s.event.start_ns)
        if s.wait_ns > 0:
            w = _wait_mechanism(s)
            out[w] = out.get(w, 0.0) + s.wait_ns
    return out


def summary(path: CriticalPath, instructions: list[Instruction], top: int = TOP
            ) -> dict[str, Any]:
    """The ``trust`` entry of ``SimResult.summary()`` (JSON-ready): the ``dominant``
    mechanisms (largest share of the critical path first), the ``approximated`` ones (fitted
    or assumed, with a share of at least 1 %) and ``approximated_percent``, the share of the
    critical path that rests on them."""
    found = shares(path, instructions)
    total = sum(found.values())

    def row(m: Mechanism, ns: float) -> dict[str, Any]:
        return {"mechanism": m.name, "basis": m.basis, "model_doc": m.where,
                "ns": round(ns, 3), "percent": round(100.0 * ns / total, 2) if total else 0.0}

    ranked = sorted(found.items(), key=lambda kv: (-kv[1], kv[0].name))
    approx = [(m, ns) for m, ns in ranked
              if m.basis in APPROXIMATE and total and ns / total >= 0.01]
    return {
        "dominant": [row(m, ns) for m, ns in ranked[:top]],
        "approximated": [row(m, ns) for m, ns in approx],
        "approximated_percent": round(100.0 * sum(ns for _, ns in approx) / total, 2)
        if total else 0.0,
    }
