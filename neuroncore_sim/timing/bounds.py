"""Performance bounds with the names and definitions AWS's Neuron Explorer uses.

Users who profile on hardware read the bounds of Neuron Explorer's summary and ``recommend``
tool; the same numbers from a simulated launch let them read the two side by side. Each bound is
a time (ns): what the launch would take if one category of overhead were gone. Definitions
(aws-neuron/neuron-agentic-development, skills/neuron-nki-profile-querying/references/
performance-bounds.md), with the quantities taken from our events:

- ``memory_bound`` = DMA active time: wall-clock time when any DMA engine moved data (the
  interval union of every DMA transfer);
- ``memory_bound_ideal`` = DMA transfer bytes / peak DMA bandwidth of the core
  (``dma_engines x dma_engine_bytes_per_ns``): every byte the DMA engines moved, the spill
  saves and reloads the compiler adds included, as Neuron Explorer sums every DMA packet
  (``dma_transfer_total_bytes``), so the gap to ``memory_bound_ideal_no_reloads`` is the excess
  traffic, reloads and spills;
- ``memory_bound_ideal_no_reloads`` = necessary bytes (every kernel input and output tensor
  once) / the same peak;
- ``compute_bound`` = TensorE active time (interval union of its MultiplyMoving, LoadStationary
  and transpose events);
- ``compute_bound_ideal_flops`` = hardware FLOPs (matmuls and TensorE transposes, ``2 K M N``)
  at the TensorE peak ``num_partitions x gemm_stationary_fmax x 2 x tensor_clock_hz``;
- ``compute_bound_ideal_useful_flops``: the same without the transposes;
- ``perfect_pipeline`` = the largest engine active time (tensor, vector, scalar, gpsimd, and the
  DMA's ``memory_bound``): the launch with perfect overlap.

``bn_speedup`` of a memory or compute bound is the launch time over the larger of the bound and
the slowest engine that bound does not improve (the compute engines for the memory family, the
DMA and the other compute engines for the compute family); for ``perfect_pipeline`` it is the
launch time over the bound.
"""

from __future__ import annotations

import math
from typing import Any

from ..config import NeuronCoreConfig
from ..program.ir import Engine, Instruction, Opcode, Program
from .events import TENSOR_LS_ROW, Event, TimingResult, is_dma_row

#: The compute engines whose active times enter ``perfect_pipeline``.
_COMPUTE = ("tensor", "vector", "scalar", "gpsimd")


def union_ns(intervals: list[tuple[float, float]]) -> float:
    """Wall-clock time covered by possibly overlapping [start, end) intervals."""
    total, cur_start, cur_end = 0.0, None, None
    for start, end in sorted(intervals):
        if cur_end is None or start > cur_end:
            if cur_end is not None:
                total += cur_end - cur_start
            cur_start, cur_end = start, end
        elif end > cur_end:
            cur_end = end
    if cur_end is not None:
        total += cur_end - cur_start
    return total


def active_ns(events: tuple[Event, ...]) -> dict[str, float]:
    """Active (interval-union) time of each engine: the four compute engines (TensorE with its
    LoadStationary row) and "dma" (any DMA engine)."""
    spans: dict[str, list[tuple[float, float]]] = {row: [] for row in (*_COMPUTE, "dma")}
    for e in events:
        row = "dma" if is_dma_row(e.engine) else ("tensor" if e.engine == TENSOR_LS_ROW
                                                   else e.engine)
        if row in spans:
            spans[row].append((e.start_ns, e.end_ns))
    return {row: union_ns(s) for row, s in spans.items()}


def instruction_flops(ins: Instruction) -> tuple[int, bool]:
    """(hardware FLOPs, whether it is a transpose) of one instruction: ``2 K M N`` for an
    nc_matmul, a TensorE transpose of a [P, F] tile as the matmul with a [P, P] identity it
    is, 0 for anything else."""
    if ins.opcode is Opcode.NC_MATMUL:
        st, mv = ins.srcs["stationary"], ins.srcs["moving"]
        return 2 * st.partitions * st.free_size * mv.free_size, False
    if ins.opcode is Opcode.NC_TRANSPOSE and ins.engine is Engine.TENSOR:
        data = ins.srcs["data"]
        return 2 * data.partitions * data.free_size * data.partitions, True
    return 0, False


def tensor_flops(program: Program) -> tuple[int, int]:
    """(hardware FLOPs, transpose FLOPs) of the TensorE instructions
    (:func:`instruction_flops`)."""
    hw = transposes = 0
    for ins in program.instructions:
        flops, transpose = instruction_flops(ins)
        hw += flops
        transposes += flops if transpose else 0
    return hw, transposes


def transfer_bytes(timing: TimingResult) -> int:
    """Bytes of every DMA transfer: the kernel's DMAs (``KernelWork.dma_bytes``) and the
    spill saves and reloads the compiler adds."""
    return sum(e.nbytes for e in timing.events if is_dma_row(e.engine))


def necessary_bytes(program: Program) -> int:
    """Bytes of every kernel input and output tensor, each once."""
    return sum(math.prod(t.shape) * t.dtype.itemsize for t in program.tensors
               if t.kind in ("input", "output"))


def aws_bounds(program: Program, timing: TimingResult, config: NeuronCoreConfig
               ) -> dict[str, Any]:
    """The bounds (ns) and their ``bn_speedup``, as Neuron Explorer names them."""
    total = timing.latency_ns
    active = active_ns(timing.events)
    dma_peak = config.dma_engines * config.dma_engine_bytes_per_ns  # bytes per ns
    te_peak = (config.num_partitions * config.gemm_stationary_fmax * 2.0
               * config.tensor_clock_hz / 1e9)  # FLOPs per ns
    hw, transposes = tensor_flops(program)
    bounds = {
        "memory_bound": active["dma"],
        "memory_bound_ideal": transfer_bytes(timing) / dma_peak,
        "memory_bound_ideal_no_reloads": necessary_bytes(program) / dma_peak,
        "compute_bound": active["tensor"],
        "compute_bound_ideal_flops": hw / te_peak,
        "compute_bound_ideal_useful_flops": (hw - transposes) / te_peak,
    }
    bottleneck = max(active, key=lambda row: (active[row], row))
    bounds["perfect_pipeline"] = active[bottleneck]
    not_memory = max(active[row] for row in _COMPUTE)
    not_tensor = max(active[row] for row in ("vector", "scalar", "gpsimd", "dma"))

    def speedup(bound: float, others: float) -> float:
        floor = max(bound, others)
        return total / floor if floor > 0 else 1.0

    out: dict[str, Any] = {name: round(ns, 3) for name, ns in bounds.items()}
    out["bn_speedup"] = {
        name: round(speedup(ns, not_memory if name.startswith("memory") else
                            not_tensor if name.startswith("compute") else 0.0), 3)
        for name, ns in bounds.items()}
    out["engine_active_ns"] = {row: round(ns, 3) for row, ns in active.items()}
    out["pipeline_bottleneck"] = bottleneck
    out["hardware_flops"] = hw
    out["transpose_flops"] = transposes
    out["necessary_bytes"] = necessary_bytes(program)
    out["dma_transfer_total_bytes"] = transfer_bytes(timing)
    return out
