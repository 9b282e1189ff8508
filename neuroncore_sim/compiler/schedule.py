"""From a recorded Program to what the timing model runs: per-engine in-order queues and the
dependency edges between instructions.

Hazards. Two accesses conflict when they touch overlapping regions of one tensor
(``Access.overlaps``: intersecting row and column bounds, not whole tensors): a read after a
write (RAW), a write after a write (WAW) or a write after a read (WAR) gives an edge from the
earlier instruction to the later one. An ``nc_matmul`` with ``accumulate=True`` also reads its
output. Edges between two instructions of one in-order compute engine are kept only for RAW (the
timing model exposes the pipeline latency there); WAR/WAW on one engine are implied by its
order. To stay fast, each tensor keeps only its *live* accesses: a write drops the earlier reads
and writes its bounds fully cover (every later conflict with them also conflicts with the
covering write, which is ordered after them), and the live accesses are indexed by buckets of
rows and columns (block by block for a block tensor), so an access scans only those near it:
the cost stays linear in the accesses whatever the pattern (issue 16).

Buffer reuse. The tiles of one allocation site share a ring of physical buffers, sized (and
checked against SBUF / PSUM capacity) by :mod:`.capacity`. A tile gets the least recently freed
slot of its ring; its first instruction then waits (WAW/WAR) for the live accesses of the slot's
previous occupant. This is what lets the load of iteration i+1 overlap the compute of iteration
i, and what serialises a kernel with too little memory.

A tensor with block dims is one tile per block (:mod:`.tiles`): its blocks have their own live
ranges and ring slots, and a block reusing a slot waits only for the accesses of the previous
occupant's columns.

Spills. When a memory's rings do not fit, :mod:`.placement` places its tiles by live range and
inserts the spill copies into the instance's instruction stream (SBUF: ``dma_copy`` to HBM and
back; PSUM: VectorE ``tensor_copy`` to SBUF and back); the ordinary hazards order them after
the tile's writes and before its next reads, and a tile placed by live range waits for the live
accesses of the tiles whose memory it takes (including a save), instead of a ring slot.

SPMD instances run one after another with a full barrier between them (the docs: instances
execute serially on one NeuronCore), so each instance is scheduled on its own.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Mapping

from ..errors import SpillWarning
from .capacity import BufferPlan, BufferRing
from .deps import Deps
from .hazard_index import KIND_NAMES, RAW, WAR, WAW  # noqa: F401  (part of this interface)
from .hazard_index import LiveAccesses as _LiveAccesses  # (reorder.py's too)
from .hoist import read_first_results
from .placement import InstancePlan
from ..program.ir import DMA_OPCODES, Engine, Instruction, MemSpace, Opcode
from .tiles import BLOCK_SHIFT, access_keys, tile_cols

_TID_MASK = (1 << BLOCK_SHIFT) - 1

#: Queue name of the DMA instructions (issued dataflow-style, not in order).
DMA_QUEUE = "dma"


@dataclass(frozen=True, slots=True)
class InstanceSchedule:
    """What the timing model needs to run one SPMD instance.

    Attributes:
        instance: the instance index.
        instructions: its instructions, in program order.
        queues: engine name -> instruction ids in issue order ("dma": DMA instructions).
        deps: instruction id -> ((producer id, kind), ...) sorted by producer id (packed,
            :class:`~.deps.Deps`); kind is RAW, WAW or WAR.
        ls_deps: nc_matmul id -> producers its stationary operand reads from (RAW); its
            LoadStationary stage waits only for these.
        ls_skip: nc_matmul ids whose stationary is already in the array (same region as the
            previous TensorE matmul, not written since): no LoadStationary.
        rings: the buffer rings of the allocation sites.
        hoisted: ids of the loop-invariant repeats the compiler computes once (:mod:`.hoist`);
            they run in no time and read nothing (their instructions here have no sources).
        dma_after: DMA id -> the DMA whose trigger comes before it (:mod:`.dma_triggers`): it
            is issued no earlier than that one.
    """

    instance: int
    instructions: tuple[Instruction, ...]
    queues: dict[str, tuple[int, ...]]
    deps: Deps
    ls_deps: dict[int, tuple[int, ...]]
    ls_skip: frozenset[int]
    rings: tuple[BufferRing, ...]
    hoisted: frozenset[int] = frozenset()
    dma_after: Mapping[int, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Schedule:
    """The schedule of a whole launch: one :class:`InstanceSchedule` per instance, in order,
    and the SpillWarnings of a launch whose tiles are spilled (for the caller to show)."""

    instances: tuple[InstanceSchedule, ...]
    warnings: tuple[SpillWarning, ...] = ()


def queue_name(ins: Instruction) -> str:
    """The queue an instruction goes to: its engine name, or "dma" for DMA opcodes."""
    return DMA_QUEUE if ins.opcode in DMA_OPCODES else _ENGINE_NAMES[ins.engine]


#: Engine -> its name (``Engine.value`` is a property of the enum: slow in the passes' loops).
_ENGINE_NAMES = {e: e.value for e in Engine}


def instance_streams(instance: int, ip: InstancePlan, hoisted: dict[int, int],
                     dma_after: Mapping[int, int]) -> InstanceSchedule:
    """The engine streams of one instance and the semaphore edges between them: each
    instruction in its engine's queue in stream order, edges from the read/write hazards of
    its accesses and of the ring slots the memory plan ``ip`` gave its tiles."""
    instrs, plan = ip.instrs, ip.plan
    # (the rings' first uses are indices into the stream the plan was made on, without the
    # SBUF spill copies; the ids are the same in both)
    prev_occupant, first_use = _assign_buffers(ip.planned, plan, skip=ip.unringed)
    queues: dict[str, list[int]] = {}
    for ins in instrs:
        queues.setdefault(queue_name(ins), []).append(ins.id)
    deps, ls_deps, ls_skip, near_repeats = _hazards(instrs, prev_occupant, first_use, plan,
                                                    ip.takes, hoisted)
    if hoisted:
        read_first_results(deps, ls_deps, hoisted, RAW, only=near_repeats)
    return InstanceSchedule(instance, tuple(instrs), {k: tuple(v) for k, v in queues.items()},
                            deps, ls_deps, frozenset(ls_skip), plan.rings, frozenset(hoisted),
                            dma_after)


# --- buffer rings ---------------------------------------------------------------------------------

def _assign_buffers(instrs: list[Instruction], plan: BufferPlan, skip: set[int] | None = None
                    ) -> tuple[dict[int, int], dict[int, list[int]]]:
    """The previous occupant of each tile's slot in its ring (tile key -> tile key) and, per
    instruction id, the tiles it touches first (tiles in ``skip`` get no slot)."""
    prev: dict[int, int] = {}
    for ring, tids in zip(plan.rings, plan.site_tiles):
        if skip and tids[0] in skip:
            continue
        prev.update(_slots(tids, plan.first, plan.last, ring.buffers))
    first_use: dict[int, list[int]] = {}
    for tid in prev:
        first_use.setdefault(instrs[plan.first[tid]].id, []).append(tid)
    return prev, first_use


def _slots(tids: tuple[int, ...], first: dict[int, int], last: dict[int, int],
           buffers: int) -> dict[int, int]:
    """Give each tile (in first-use order) the least recently freed slot; return
    tile -> previous occupant of its slot."""
    free = [(-1, s) for s in range(buffers)]  # (last use of the previous occupant, slot)
    active: list[tuple[int, int]] = []
    occupant: dict[int, int] = {}
    prev: dict[int, int] = {}
    for tid in tids:
        while active and active[0][0] < first[tid]:
            heapq.heappush(free, heapq.heappop(active))
        _, slot = heapq.heappop(free)
        if slot in occupant:
            prev[tid] = occupant[slot]
        occupant[slot] = tid
        heapq.heappush(active, (last[tid], slot))
    return prev


# --- hazards --------------------------------------------------------------------------------------

def _hazards(instrs: list[Instruction], prev_occupant: dict[int, int],
             first_use: dict[int, list[int]], plan: BufferPlan,
             takes: dict[int, list[tuple[int, tuple[int, ...]]]], hoisted: dict[int, int]
             ) -> tuple[Deps, dict[int, tuple[int, ...]], list[int], list[int]]:
    """The edges of every instruction, the stationary producers and skipped LoadStationary
    of the matmuls (InstanceSchedule), and the ids with edges that are loop-invariant
    repeats (``hoisted``) or have one among their producers (for read_first_results)."""
    near_repeats: list[int] = []
    version: dict[int, int] = {}
    queue_of: dict[int, str] = {}
    deps = Deps()
    ls_deps: dict[int, tuple[int, ...]] = {}
    ls_skip: list[int] = []
    last_stationary: tuple[object, ...] | None = None
    live = _LiveAccesses()
    written = {a.tensor.id for i in instrs for a in i.dsts.values() if a.space is MemSpace.HBM}
    split = plan.split
    #: tile key -> the accesses of its slot's previous occupant (dependency kind per instruction)
    slot_waits: dict[int, dict[int, int]] = {}
    #: tile key -> compute queue -> the slot waits its next access on that queue still needs.
    #: On the queue itself only RAW edges are kept, and a slot wait is never RAW nor changes a
    #: RAW found elsewhere (kinds merge by min), so the waits on the queue's own instructions
    #: are dropped. And only the first instruction of an in-order queue that touches the tile
    #: gets them: the later ones start after it started, when they are already met (their
    #: start cannot move, nor what delayed it). A tile read thousands of times would otherwise
    #: carry all its slot's waits to every reader. DMAs (issued out of order) get them all.
    slot_waits_for: dict[int, dict[str, list[tuple[int, int]]]] = {}
    placed_writes = 0
    hbm = MemSpace.HBM
    for ins in instrs:
        me, q = ins.id, queue_name(ins)
        on_dma = q == DMA_QUEUE
        queue_of[me] = q
        found: dict[int, int] = {}
        for key in first_use.pop(me, ()):  # the tile's slot was used by an earlier tile
            old = prev_occupant.pop(key)  # (both popped: read once, then only memory held)
            waits: dict[int, int] = {}
            if split.get(old & _TID_MASK):  # one block of a tensor: its columns only
                live.touching(old & _TID_MASK, *tile_cols(old, plan.decls[old]), waits)
            else:
                live.pop_all(old, waits)
            _set_slot_waits(slot_waits, slot_waits_for, key, waits)
            _set_slot_waits(slot_waits, slot_waits_for, old, {})  # the previous occupant is
            del slot_waits[old]  # dead (_slots): its waits are never asked for again (dropped)
        for key, holders in takes.get(me, ()):  # placed by live range (spill.py): the
            waits = {}  # tile's memory was last held by these tiles, dead or spilled
            for h in holders:
                live.touching(h & _TID_MASK, *tile_cols(h, plan.decls[h]), waits)
            _set_slot_waits(slot_waits, slot_waits_for, key, waits)
        # Every access of a tile in a reused slot waits for the slot's previous occupant, not
        # only the first: a tile filled by several DMAs (dataflow, unordered) would otherwise
        # overwrite the old tile while it is still being read.
        if slot_waits:
            delivered: list[int] = []
            for a in (*ins.srcs.values(), *ins.dsts.values()):
                tid = a.tensor.id
                per = split.get(tid)
                for key in (access_keys(a, per) if per else (tid,)):
                    waits = slot_waits.get(key)
                    if not waits:
                        continue
                    if on_dma:
                        items = waits.items()
                    else:
                        per_queue = slot_waits_for.get(key)
                        if per_queue is None:
                            per_queue = slot_waits_for[key] = {}
                        items = per_queue.get(q)
                        if items is None:
                            items = per_queue[q] = [
                                (j, k) for j, k in waits.items() if queue_of[j] != q]
                            delivered.append(key)
                    for j, k in items:
                        found[j] = min(found.get(j, k), k)
            for key in delivered:  # met for the queue's later instructions
                slot_waits_for[key][q] = []
        matmul = ins.opcode is Opcode.NC_MATMUL
        stationary: list[int] = []
        for role, a in ins.srcs.items():
            if a.tensor.space is hbm and a.tensor.id not in written:
                continue  # an input, never written: its reads conflict with nothing, not kept
            hits = live.read(a, me, found)
            if matmul and role == "stationary":
                stationary = hits
        if matmul and ins.attrs.get("accumulate"):
            live.read(ins.out, me, found)
        for a in ins.dsts.values():
            live.write(a, me, found)
            tid = a.tensor.id
            version[tid] = version.get(tid, 0) + 1
            if a.tensor.placement is not None:  # may overwrite another placed tile's memory
                placed_writes += 1
        if found:
            if not on_dma:  # same in-order engine: only RAW needs an edge
                found = {j: k for j, k in found.items() if k == RAW or queue_of[j] != q}
            if found:
                deps.add(me, found)
                if hoisted and (me in hoisted or not hoisted.keys().isdisjoint(found)):
                    near_repeats.append(me)
        if matmul:
            st = ins.srcs["stationary"]
            key = (st.tensor.id, st.offset, st.pattern, version.get(st.tensor.id, 0),
                   placed_writes if st.tensor.placement is not None else 0)
            if key == last_stationary:
                ls_skip.append(me)
            last_stationary = key
            ls_deps[me] = tuple(sorted(set(stationary)))
        elif ins.engine is Engine.TENSOR and not on_dma:
            last_stationary = None  # a TensorE transpose replaces the array's contents
    return deps, ls_deps, ls_skip, near_repeats


def _set_slot_waits(slot_waits: dict[int, dict[int, int]],
                    slot_waits_for: dict[int, dict[str, list[tuple[int, int]]]], key: int,
                    waits: dict[int, int]) -> None:
    """Tile ``key`` waits for ``waits`` (its memory's previous holders), on every queue anew."""
    slot_waits[key] = waits
    slot_waits_for.pop(key, None)
