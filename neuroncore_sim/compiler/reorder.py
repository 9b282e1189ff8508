"""Instruction scheduling: the order of each engine's stream across ``affine_range`` iterations.

What neuronx-cc does: the iterations of an ``nl.affine_range`` loop carry no dependencies, so
the compiler may interleave them: the reference says they "could be parallelized/pipelined on
different compute engines" (``nl.affine_range``, SDK 2.20-2.26), and the SDK 2.27 docs say its
middle-end passes reorder and fuse loops and "are not predictable"; ``ncc.no_reorder`` and
``skip_middle_end_transformations`` keep the kernel's order. Evidence that the hardware runs
interleaved streams: Autocomp's attention versions keep TensorE ~98 % busy where a stream in
program order waits for each iteration's VectorE and ScalarE work in turn.

Model: a list scheduler over the instance's dependency graph (read/write hazards of the
accesses, as :mod:`.schedule` finds them, every kind), with the compiler's estimate of each
instruction's time (:func:`estimate_ns`). Each engine, when free, takes the ready instruction
that comes first in program order; when none is ready it takes the one ready soonest.
Instructions of one iteration (the same ``affine_range`` iterations, ``Instruction.loops``)
keep their program order on their engine, so a ``sequential_range`` or Python loop inside one
iteration is never reordered; an engine looks at most ``reorder_window_instructions`` of its
unscheduled instructions ahead (a bound on how far ahead the compiler pipelines: the buffers
it would need grow with it). The instance's stream is then the instructions sorted by their
estimated start, a DMA that feeds an instruction placed just before its first reader (loads are
issued as their buffers allow anyway); the memory plan and the semaphores are made on that
stream.
Switch: ``config.compiler.reorder`` (and a kernel under ``no_reorder`` is not reordered).
"""

from __future__ import annotations

import heapq
import math

from ..config import NeuronCoreConfig
from ..dtypes import dtype_name
from ..program.ir import Engine, Instruction, MemSpace, Opcode
from .engine_choice import estimate_ns as compute_ns
from .schedule import DMA_QUEUE, RAW, _LiveAccesses, queue_name


def estimate_ns(ins: Instruction, config: NeuronCoreConfig) -> tuple[float, float]:
    """(time the instruction holds its queue, time until its result is visible) in ns."""
    if ins.engine is Engine.DMA or queue_name(ins) == DMA_QUEUE:
        nbytes = max(ins.srcs["src"].nbytes, ins.out.nbytes)
        occupy = nbytes / (config.dma_engines * config.dma_hbm_read_bytes_per_ns)
        return occupy, occupy + config.dma_fixed_latency_ns + config.semaphore_latency_ns
    if ins.engine is Engine.TENSOR:
        role = "moving" if ins.opcode is Opcode.NC_MATMUL else next(iter(ins.srcs), None)
        n = ins.srcs[role].free_size if role in ins.srcs else ins.out.free_size
        cycles = max(config.mm_init_latency_cycles, n)
        if ins.opcode is Opcode.NC_MATMUL and not ins.attrs.get("auto_cast") and "float32" in (
                dtype_name(ins.srcs["stationary"].dtype), dtype_name(ins.srcs["moving"].dtype)):
            cycles *= config.fp32_matmul_slowdown
        occupy = config.cycles_to_ns("tensor", cycles)
        return occupy, occupy + config.tensor_pipeline_latency_ns + config.semaphore_latency_ns
    engine = ins.engine if ins.engine in (Engine.VECTOR, Engine.SCALAR) else Engine.VECTOR
    occupy = compute_ns(ins, engine, config)
    pipe = config.cycles_to_ns(ins.engine.value, config.engine_pipeline_latency_cycles)
    return occupy, occupy + pipe + config.semaphore_latency_ns


def _graph(instrs: list[Instruction]) -> list[list[tuple[int, bool]]]:
    """Per instruction (by position), its successors as (position, is_raw): the hazards of the
    accesses in program order, and the program order of one iteration's instructions on one
    queue (DMAs excepted: the hardware issues them as their data allows)."""
    pos = {ins.id: k for k, ins in enumerate(instrs)}
    succ: list[list[tuple[int, bool]]] = [[] for _ in instrs]
    live = _LiveAccesses()
    written = {a.tensor.id for i in instrs for a in i.dsts.values() if a.space is MemSpace.HBM}
    last: dict[tuple[str, tuple], int] = {}
    for k, ins in enumerate(instrs):
        found: dict[int, int] = {}
        for a in ins.srcs.values():
            if a.tensor.space is not MemSpace.HBM or a.tensor.id in written:
                live.read(a, ins.id, found)
        if ins.opcode is Opcode.NC_MATMUL and ins.attrs.get("accumulate"):
            live.read(ins.out, ins.id, found)
        for a in ins.dsts.values():
            live.write(a, ins.id, found)
        for p, kind in found.items():
            succ[pos[p]].append((k, kind == RAW))
        q = queue_name(ins)
        if q != DMA_QUEUE:
            prev = last.get((q, ins.loops))
            if prev is not None:
                succ[prev].append((k, False))
            last[q, ins.loops] = k
    return succ


def reorder(instrs: list[Instruction], config: NeuronCoreConfig,
            free: frozenset[int] | set[int] | dict[int, int] = frozenset()
            ) -> list[Instruction]:
    """``instrs`` in the order the list scheduler starts them (ids in ``free`` take no time)."""
    n = len(instrs)
    if n < 2:
        return instrs
    succ = _graph(instrs)
    indeg = [0] * n
    for s in succ:
        for k, _ in s:
            indeg[k] += 1
    cost = [(0.0, 0.0) if ins.id in free else estimate_ns(ins, config) for ins in instrs]
    queues: dict[str, list[int]] = {}
    qof = [queue_name(ins) for ins in instrs]
    qpos = [0] * n
    for k, q in enumerate(qof):
        qpos[k] = len(queues.setdefault(q, []))
        queues[q].append(k)
    window = config.reorder_window_instructions
    head = dict.fromkeys(queues, 0)
    busy_until = dict.fromkeys(queues, 0.0)
    waiting: dict[str, list[tuple[float, int]]] = {q: [] for q in queues}
    ready: dict[str, list[int]] = {q: [] for q in queues}
    ready_t = [0.0] * n
    released = [False] * n
    done = [False] * n
    start = [0.0] * n
    agenda: list[tuple[float, str]] = []

    def next_start(q: str) -> float:
        if ready[q]:
            return busy_until[q]
        if waiting[q]:
            return max(busy_until[q], waiting[q][0][0])
        return math.inf

    def offer(k: int) -> None:  # released and inside its queue's window: a candidate
        q = qof[k]
        heapq.heappush(waiting[q], (ready_t[k], k))
        heapq.heappush(agenda, (next_start(q), q))

    for k in range(n):
        if indeg[k] == 0:
            released[k] = True
            if qpos[k] < window:
                offer(k)
    scheduled = 0
    while scheduled < n:
        t, q = heapq.heappop(agenda)
        if t != next_start(q) or t == math.inf:
            continue  # a stale entry
        w, r = waiting[q], ready[q]
        while w and w[0][0] <= t:
            heapq.heappush(r, heapq.heappop(w)[1])
        k = heapq.heappop(r)
        start[k], done[k] = t, True
        scheduled += 1
        occupy, visible = cost[k]
        busy_until[q] = t + occupy
        order, old = queues[q], head[q]
        while head[q] < len(order) and done[order[head[q]]]:
            head[q] += 1
        for p in range(old + window, min(head[q] + window, len(order))):
            if released[order[p]] and not done[order[p]]:
                offer(order[p])
        for s, _ in succ[k]:
            ready_t[s] = max(ready_t[s], t + (visible if qof[s] != q else occupy))
            indeg[s] -= 1
            if indeg[s] == 0:
                released[s] = True
                if qpos[s] < head[qof[s]] + window:
                    offer(s)
        heapq.heappush(agenda, (next_start(q), q))
    return [instrs[k] for k in sorted(range(n), key=lambda k: _place(k, start, succ, qof))]


def _place(k: int, start: list[float], succ: list[list[tuple[int, bool]]], qof: list[str]
           ) -> tuple[float, int, int]:
    """Where instruction ``k`` goes in the stream: at its estimated start, except a DMA that
    feeds an instruction, which goes just before its first reader. A load's tile is then live
    from where it is read, as in the kernel; the timing model still issues the DMA as soon as
    its data and its buffer allow (the rings decide how far ahead)."""
    if qof[k] == DMA_QUEUE:
        readers = [start[s] for s, raw in succ[k] if raw]
        if readers:
            return min(readers), 0, k
    return start[k], 1, k
