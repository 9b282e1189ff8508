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
iteration is never reordered, and so do the iterations of a loop that carries an accumulation
(an engine's ``acc[...] += x`` into one tensor across its iterations, :func:`carried_loops`).
An engine looks at most ``reorder_window_instructions`` of its unscheduled instructions ahead
(a bound on how far ahead the compiler pipelines: the buffers it would need grow with it).
No instruction opens a tile that does not fit beside the live ones, and one that is not its
engine's first also waits while it would grow the buffer rings past capacity
(:class:`_Memory`): a fast producer does not run ahead of its slow readers further than the
buffers the allocator can give. The instance's stream is then the instructions sorted by their
estimated start, a DMA that feeds an instruction placed just before its first reader (loads
are issued as their buffers allow anyway); the memory plan and the semaphores are made on that
stream.
Switch: ``config.compiler.reorder`` (and a kernel under ``no_reorder`` is not reordered).
"""

from __future__ import annotations

import heapq
import itertools
import math

from ..config import NeuronCoreConfig
from ..dtypes import dtype_name
from ..program.ir import Engine, Instruction, MemSpace, Opcode, TensorDecl
from .engine_choice import estimate_ns as compute_ns
from .schedule import DMA_QUEUE, RAW, _LiveAccesses, queue_name
from .tiles import site_key, tile_bytes


#: How many more spilled bytes (relative) an interleaved schedule may cost than the kernel's
#: order and still be taken (assumption: kernels that spill either way spill about as much).
SPILL_TOLERANCE = 0.05


def _psum_bytes(t: TensorDecl, bank: int) -> int:
    """Bytes per partition a PSUM tensor takes: whole banks for each block (tile) of it."""
    block = max(tile_bytes(t), 1)
    return math.ceil(block / bank) * bank * max(1, t.row_bytes // block)


class _Memory:
    """What the allocator will ask for, followed as the scheduler goes: per allocation site
    (``TensorDecl.site``) the tiles open now and the most ever open, and the bytes per
    partition those maxima add up to in each memory (SBUF, PSUM in whole banks), as
    :mod:`.capacity` sums them, and the bytes of the tiles open now. A tile opens with its
    first instruction and closes after its last."""

    def __init__(self, instrs: list[Instruction], config: NeuronCoreConfig,
                 tables: _Tables | None = None) -> None:
        self.capacity = {MemSpace.SBUF: config.sbuf_usable_bytes_per_partition,
                         MemSpace.PSUM: config.psum_bytes_per_partition}
        # ``tables``: those of another _Memory of the same instructions (read only: shared)
        self.tables = tables if tables is not None else _tables(instrs, config)
        self.opens, uses, self.sizes, self.touches, sites, self.new_bytes = self.tables
        self.uses = dict(uses)  # tensor id -> instructions still to schedule
        # per site (numbered: _tables), its tiles open now and at most
        self.open = [0] * len(sites)
        self.peak = [0] * len(sites)
        self.demand = dict.fromkeys(self.capacity, 0)
        self.site_bytes: dict[int, int] = {}  # site number -> bytes its ring has reached
        self.site_space: dict[int, MemSpace] = {}
        # bytes of the tiles open now and at most (placement by live range needs no more)
        self.live = dict.fromkeys(self.capacity, 0)
        self.live_peak = dict.fromkeys(self.capacity, 0)

    def fits(self, k: int, rings: bool) -> bool:
        """Whether instruction ``k``'s new tiles fit beside the tiles live now (what placement
        by live range needs: the least any allocation needs) and, with ``rings``, also keep
        every memory's rings (the sum of the sites' most tiles open) within capacity."""
        capacity = self.capacity
        for m, size in self.new_bytes[k]:  # (each memory's new tiles, summed once: _tables)
            if self.live[m] + size > capacity[m]:
                return False
        if not rings:
            return True
        ring: dict[MemSpace, int] = {}
        open_, peak = self.open, self.peak
        for site, space, size, _ in self.opens[k]:
            if open_[site] >= peak[site]:  # (the site's ring grows)
                ring[space] = ring.get(space, 0) + size
        for m, size in ring.items():
            if size and self.demand[m] + size > capacity[m]:
                return False
        return True

    def schedule(self, k: int) -> bool:
        """Open ``k``'s new tiles, close those it is the last use of; whether any closed."""
        closed = False
        live, open_, peak = self.live, self.open, self.peak
        for site, space, size, _ in self.opens[k]:
            now = live[space] = live[space] + size
            if now > self.live_peak[space]:
                self.live_peak[space] = now
            n = open_[site] = open_[site] + 1
            if n > peak[site]:
                peak[site] = n
                self.demand[space] += size
                self.site_bytes[site] = self.site_bytes.get(site, 0) + size
                self.site_space[site] = space
        uses = self.uses
        for tid in self.touches[k]:
            left = uses[tid] = uses[tid] - 1
            if left == 0:
                site, space, size = self.sizes[tid]
                open_[site] -= 1
                live[space] -= size
                closed = True
        return closed


#: What a _Memory reads of its instructions: per instruction the tiles it opens (site number,
#: memory, bytes, tensor id); per tensor id its uses; per tensor id its site number, memory and
#: bytes; per instruction the tensor ids of its tracked accesses (one per access); the sites
#: (``TensorDecl.site``, or the tensor id without one), by number; per instruction the bytes
#: its new tiles take in each memory (the memories where they take any).
_Tables = tuple[list[list[tuple[int, MemSpace, int, int]]], dict[int, int],
                dict[int, tuple[int, MemSpace, int]], list[tuple[int, ...]], list[object],
                list[tuple[tuple[MemSpace, int], ...]]]


def _tables(instrs: list[Instruction], config: NeuronCoreConfig) -> _Tables:
    """The tables of a :class:`_Memory` of ``instrs``: the tiles are looked up once here (per
    tensor, not per access), not at every ``schedule()``, and the sites are numbered (a
    SourceLoc hashes slowly) (speed)."""
    bank = config.psum_bank_bytes
    opens: list[list[tuple[int, MemSpace, int, int]]] = [[] for _ in instrs]
    uses: dict[int, int] = {}
    sizes: dict[int, tuple[int, MemSpace, int]] = {}
    numbers: dict[object, int] = {}  # site -> its number
    touches: list[tuple[int, ...]] = []
    untracked: set[int] = set()  # HBM tensors, directly allocated tiles
    sbuf, psum = MemSpace.SBUF, MemSpace.PSUM
    for k, ins in enumerate(instrs):
        touched = []
        for operands in (ins.srcs, ins.dsts):  # (sources first)
            for a in operands.values():
                t = a.tensor
                tid = t.id
                n = uses.get(tid)
                if n is not None:
                    uses[tid] = n + 1
                    touched.append(tid)
                    continue
                if tid in untracked:
                    continue
                space = t.space
                if (space is not sbuf and space is not psum or t.kind != "tile"
                        or t.placement is not None):
                    untracked.add(tid)
                    continue
                uses[tid] = 1
                touched.append(tid)
                size = t.row_bytes if space is sbuf else _psum_bytes(t, bank)
                site = numbers.setdefault(site_key(t), len(numbers))
                sizes[tid] = site, space, size
                opens[k].append((site, space, size, tid))
        touches.append(tuple(touched))
    new_bytes = [_per_memory(o) if len(o) > 1 else ((o[0][1], o[0][2]),) if o and o[0][2] else ()
                 for o in opens]  # (one tile or none, most instructions: without the call)
    return opens, uses, sizes, touches, list(numbers), new_bytes


def _per_memory(opens: list[tuple[int, MemSpace, int, int]]) -> tuple[tuple[MemSpace, int], ...]:
    """The bytes of the tiles ``opens`` in each memory where they take any."""
    total: dict[MemSpace, int] = {}
    for _, space, size, _ in opens:
        total[space] = total.get(space, 0) + size
    return tuple((m, size) for m, size in total.items() if size)


def memory_demand(instrs: list[Instruction], config: NeuronCoreConfig,
                  tables: _Tables | None = None
                  ) -> tuple[dict[MemSpace, int], dict[object, tuple[MemSpace, int]],
                             dict[MemSpace, int]]:
    """Bytes per partition of SBUF and PSUM the allocator's rings need for ``instrs`` in their
    order (summed as :class:`_Memory` sums them), each allocation site's memory and share, and
    the most bytes of tiles live at once (what placement by live range needs at least).
    ``tables``: a _Memory's of ``instrs``, when the caller has one."""
    memory = _Memory(instrs, config, tables)
    for k in range(len(instrs)):
        memory.schedule(k)
    sites = memory.tables[4]
    return memory.demand, {sites[site]: (memory.site_space[site], b)
                           for site, b in memory.site_bytes.items()}, memory.live_peak


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


def _estimate(ins: Instruction, config: NeuronCoreConfig,
              memo: dict[tuple, tuple[float, float]]) -> tuple[float, float]:
    """:func:`estimate_ns`, remembered by what it depends on (a loop repeats its shapes)."""
    out = ins.dsts.get("out")
    # (an operand's elements with its dtype give its bytes: ``size`` keys as ``nbytes`` would,
    # without the property's second dtype lookup)
    key = (ins.opcode, ins.engine, ins.attrs.get("auto_cast"),
           tuple([(r, a.free_size, a.size, a.dtype) for r, a in ins.srcs.items()]),
           out.free_size if out is not None else 0)
    got = memo.get(key)
    if got is None:
        got = memo[key] = estimate_ns(ins, config)
    return got


def _accumulated(ins: Instruction) -> tuple | None:
    """The region an instruction reads and writes (``t[...] += x`` on an engine: a
    read-modify-write) as (tensor id, offset, pattern), or None. A matmul accumulating in PSUM
    is not one: PSUM adds what it is written, the engine reads nothing back."""
    if ins.opcode is Opcode.NC_MATMUL:
        return None
    for d in ins.dsts.values():
        tid = d.tensor.id
        for a in ins.srcs.values():
            if a.tensor.id == tid and a.offset == d.offset and a.pattern == d.pattern:
                return tid, d.offset, d.pattern
    return None


def carried_loops(instrs: list[Instruction]) -> set[int]:
    """The ``affine_range`` loops whose iterations accumulate into one region (the reduction
    NKI allows across an affine_range's iterations): the loop carries a dependency. Iterations
    that accumulate into different regions of a tensor (a column each) carry nothing."""
    into: dict[tuple, set[tuple[int, int]]] = {}  # accumulated region -> (loop, iteration)
    for ins in instrs:
        region = _accumulated(ins)
        if region is not None:
            into.setdefault(region, set()).update(ins.loops)
    carried: set[int] = set()
    for pairs in into.values():
        seen: dict[int, int] = {}
        for loop, it in pairs:
            if seen.setdefault(loop, it) != it:
                carried.add(loop)
    return carried


def chain_key(ins: Instruction, carried: set[int]) -> tuple:
    """The iterations whose instructions keep their program order on one queue: one
    iteration's, and across the iterations of a loop that carries an accumulation (the
    compiler interleaves only independent iterations)."""
    for k, (loop, _) in enumerate(ins.loops):
        if loop in carried:
            return ins.loops[:k]
    return ins.loops


def _graph(instrs: list[Instruction], repeats: dict[int, int], qof: list[str]
           ) -> list[list[tuple[int, bool]]]:
    """Per instruction (by position), its successors as (position, is_raw): the hazards of the
    accesses in program order, the program order of one iteration's instructions on one
    queue (DMAs excepted: the hardware issues them as their data allows), and, for a
    loop-invariant repeat (``repeats``: its id -> the first computation's), the first: its
    readers read the first's result (hoist.py), so the repeat must not go before it.
    ``qof``: each instruction's queue."""
    succ: list[list[tuple[int, bool]]] = [[] for _ in instrs]
    live = _LiveAccesses()  # (which knows the instructions by position: ids are not needed)
    hbm = MemSpace.HBM
    written = {a.tensor.id for i in instrs for a in i.dsts.values() if a.tensor.space is hbm}
    pos = {ins.id: k for k, ins in enumerate(instrs)} if repeats else {}
    last: dict[tuple[str, tuple], int] = {}
    carried = carried_loops(instrs)
    matmul = Opcode.NC_MATMUL
    for k, ins in enumerate(instrs):
        found: dict[int, int] = {}
        for a in ins.srcs.values():
            t = a.tensor
            if t.space is not hbm or t.id in written:
                live.read(a, k, found)
        if ins.opcode is matmul and ins.attrs.get("accumulate"):
            live.read(ins.out, k, found)
        for a in ins.dsts.values():
            live.write(a, k, found)
        for p, kind in found.items():
            succ[p].append((k, kind == RAW))
        if repeats:
            first = repeats.get(ins.id)
            if first is not None and first in pos:
                succ[pos[first]].append((k, False))
        q = qof[k]
        if q != DMA_QUEUE:
            key = q, (chain_key(ins, carried) if carried else ins.loops)
            prev = last.get(key)
            if prev is not None:
                succ[prev].append((k, False))
            last[key] = k
    return succ


def reorder(instrs: list[Instruction], config: NeuronCoreConfig,
            repeats: dict[int, int] | None = None) -> list[Instruction]:
    """``instrs`` in the order the list scheduler starts them; ``repeats``: the loop-invariant
    repeats (id -> the first computation's id, :mod:`.hoist`), which take no time."""
    free = repeats or {}
    n = len(instrs)
    if n < 2 or all(ins.loops == instrs[0].loops for ins in instrs):
        return instrs  # one iteration (or none): every queue keeps its program order
    qof = [queue_name(ins) for ins in instrs]
    succ = _graph(instrs, free, qof)
    indeg = [0] * n
    for s in succ:
        for k, _ in s:
            indeg[k] += 1
    memo: dict[tuple, tuple[float, float]] = {}
    cost = [(0.0, 0.0) if ins.id in free else _estimate(ins, config, memo) for ins in instrs]
    queues: dict[str, list[int]] = {}
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
    memory = _Memory(instrs, config)
    # A memory the kernel's own order over-subscribes spills whatever the order: the
    # scheduler may then grow that order's demand by SPILL_TOLERANCE of the capacity (passes.py
    # compares the two streams' spills afterwards)
    own, _, live = memory_demand(instrs, config, memory.tables)
    for m, cap in memory.capacity.items():
        if live[m] > cap:  # (its tiles live at once do not fit: it spills)
            memory.capacity[m] = own[m] + int(cap * SPILL_TOLERANCE)
    held: dict[str, list[int]] = {q: [] for q in queues}  # ready, but over a memory's capacity

    def next_start(q: str) -> float:
        if ready[q]:
            return busy_until[q]
        if waiting[q]:
            b, w = busy_until[q], waiting[q][0][0]
            return b if b >= w else w  # (max(), without the call: speed)
        return math.inf

    def offer(k: int) -> None:  # released and inside its queue's window: a candidate
        q = qof[k]
        heapq.heappush(waiting[q], (ready_t[k], k))
        heapq.heappush(agenda, (next_start(q), q))

    # The held instructions woken together wait as one entry, (t, a batch number from n on),
    # and join the ready ones at once (speed: most wakes find them still too big; the same
    # candidates at the same times as with an entry each)
    batches: dict[int, list[int]] = {}
    numbers = itertools.count(n)

    def wake(q: str, t: float) -> None:  # the held ones get another look from time t
        if held[q]:
            b = next(numbers)
            batches[b] = held[q]
            held[q] = []
            heapq.heappush(waiting[q], (t, b))
        heapq.heappush(agenda, (next_start(q), q))

    for k in range(n):
        if indeg[k] == 0:
            released[k] = True
            if qpos[k] < window:
                offer(k)
    scheduled = 0
    forced = -1
    now = 0.0
    while scheduled < n:
        if not agenda:
            # Every engine waits for memory that only its own later work would free: the held
            # instruction first in program order goes anyway (the kernel's order, where it
            # does not fit either, spills).
            forced = min(h for hs in held.values() for h in hs)
            q = qof[forced]
            held[q].remove(forced)
            heapq.heappush(waiting[q], (now, forced))  # (from now: not back in time)
            heapq.heappush(agenda, (next_start(q), q))
            continue
        t, q = heapq.heappop(agenda)
        if t != next_start(q) or t == math.inf:
            continue  # a stale entry
        # (an engine whose own clock is behind starts no earlier than the scheduler has got:
        # the stream is sorted by start, which must follow the memory accounting's order)
        t = now = now if now >= t else t  # (max(), without the call)
        w, r = waiting[q], ready[q]
        while w and w[0][0] <= t:
            due = heapq.heappop(w)[1]
            if due < n:
                heapq.heappush(r, due)
            else:  # a batch of woken ones
                r.extend(batches.pop(due))
                heapq.heapify(r)
        k = heapq.heappop(r)
        # An engine's first unscheduled instruction waits only while its tiles do not fit
        # beside the live ones; a later one also while it would grow the rings past capacity
        while k != forced and not memory.fits(k, qpos[k] != head[q]):
            held[q].append(k)  # (taken again when its engine moves on or memory is freed)
            # Speed (same order): with candidates left, this engine's next start is its
            # busy_until, no later than t, so the agenda would give it the next turn anyway,
            # at the same ``now`` and with nothing new waiting: its next candidate is tried here
            if not r:
                k = -1  # (every candidate held)
                break
            k = heapq.heappop(r)
        if k < 0:
            heapq.heappush(agenda, (next_start(q), q))
            continue
        closed = memory.schedule(k)
        start[k], done[k] = t, True
        scheduled += 1
        occupy, visible = cost[k]
        busy_until[q] = t + occupy
        order, old = queues[q], head[q]
        while head[q] < len(order) and done[order[head[q]]]:
            head[q] += 1
        if held[q] and head[q] < len(order):  # give the held ones another look
            wake(q, t)
        if closed:
            for other in queues:
                if held[other]:
                    wake(other, t + occupy)
        for p in range(old + window, min(head[q] + window, len(order))):
            if released[order[p]] and not done[order[p]]:
                offer(order[p])
        for s, raw in succ[k]:
            # a reader on the same engine sees the result after the pipeline as well (except
            # on TensorE, whose accumulation chains are pipelined): the scheduler fills the
            # gap with independent work when it has some (timing/engines.py)
            near = qof[s] == q and (not raw or q == "tensor")
            seen = t + (occupy if near else visible)
            if seen > ready_t[s]:
                ready_t[s] = seen
            indeg[s] -= 1
            if indeg[s] == 0:
                released[s] = True
                if qpos[s] < head[qof[s]] + window:
                    offer(s)
        heapq.heappush(agenda, (next_start(q), q))
    places = [_place(k, start, succ, qof) for k in range(n)]
    return [instrs[k] for k in sorted(range(n), key=places.__getitem__)]


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
