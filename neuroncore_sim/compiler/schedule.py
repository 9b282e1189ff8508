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
from dataclasses import dataclass

from ..errors import SpillWarning
from .capacity import BufferPlan, BufferRing
from .deps import Deps
from .hoist import read_first_results
from .placement import InstancePlan
from ..program.ir import DMA_OPCODES, Access, Engine, Instruction, MemSpace, Opcode
from .tiles import BLOCK_SHIFT, access_keys, block_elems, tile_cols

_TID_MASK = (1 << BLOCK_SHIFT) - 1

RAW, WAW, WAR = 0, 1, 2
#: Edge kind names, indexed by the kind code.
KIND_NAMES = ("RAW", "WAW", "WAR")
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
    """

    instance: int
    instructions: tuple[Instruction, ...]
    queues: dict[str, tuple[int, ...]]
    deps: Deps
    ls_deps: dict[int, tuple[int, ...]]
    ls_skip: frozenset[int]
    rings: tuple[BufferRing, ...]
    hoisted: frozenset[int] = frozenset()


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


def instance_streams(instance: int, ip: InstancePlan, hoisted: dict[int, int]
                     ) -> InstanceSchedule:
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
    deps, ls_deps, ls_skip = _hazards(instrs, prev_occupant, first_use, plan, ip.takes)
    if hoisted:
        read_first_results(deps, ls_deps, hoisted, RAW)
    return InstanceSchedule(instance, tuple(instrs), {k: tuple(v) for k, v in queues.items()},
                            deps, ls_deps, frozenset(ls_skip), plan.rings, frozenset(hoisted))


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
             takes: dict[int, list[tuple[int, tuple[int, ...]]]]
             ) -> tuple[Deps, dict[int, tuple[int, ...]], list[int]]:
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
    return deps, ls_deps, ls_skip


def _set_slot_waits(slot_waits: dict[int, dict[int, int]],
                    slot_waits_for: dict[int, dict[str, list[tuple[int, int]]]], key: int,
                    waits: dict[int, int]) -> None:
    """Tile ``key`` waits for ``waits`` (its memory's previous holders), on every queue anew."""
    slot_waits[key] = waits
    slot_waits_for.pop(key, None)

#: Live accesses are indexed by buckets of rows and columns of their tensor, so that an access
#: scans only the live accesses near it, whatever the kernel's pattern (an HBM output written
#: tile by tile, a block tensor whose blocks are read thousands of times, a wide accumulator):
#: tensors with more rows than _BUCKET_ABOVE_ROWS have buckets of _BUCKET_ROWS rows; columns
#: go by the tensor's block width (block dims) or _BUCKET_COLS elements, widened so that one
#: tensor row has at most _MAX_COL_BUCKETS buckets (_MAX_BLOCK_BUCKETS for block dims: a kernel
#: may have thousands of blocks per tensor). An access spanning several buckets is listed
#: in each; the edges found are the same as with one list per tensor.
_BUCKET_ABOVE_ROWS = 512
_BUCKET_ROWS = 128
_BUCKET_COLS = 512
_MAX_COL_BUCKETS = 64
#: A block tensor has a bucket per block (up to this many: the key's column bits), whatever
#: their number: an instruction touches one block, and a block reusing a slot scans its own.
_MAX_BLOCK_BUCKETS = 1 << 19
#: Bucket key: (tensor id + _TID_BIAS) << _KEY_TID | row bucket << _KEY_ROW | column bucket.
_TID_BIAS, _KEY_TID, _KEY_ROW = 8, 48, 20


#: Pseudo tensor ids of the physical SBUF and PSUM, where the accesses of directly allocated
#: tiles are tracked (rows are partitions, one bucket; columns are byte addresses).
_PHYSICAL = {MemSpace.SBUF: -1, MemSpace.PSUM: -2}
#: Byte addresses of a partition the column buckets of the physical memories are cut from.
_PHYSICAL_BYTES = 192 * 1024

#: HBM tensors of three or more dims and at most _BUCKET_ABOVE_ROWS rows (their leading dim: a
#: [32, 128, N] output) have a row bucket per few rows, at most this many buckets: such a tensor
#: is written tile by tile, one leading index per DMA, and with its rows in one bucket every
#: store would scan the live stores of all the others (their bounding boxes span the columns:
#: quadratic in stores). (A 2-D one, e.g. a spill's scratch, is read and written all rows at
#: once: row buckets would only list each access many times.)
_HBM_ROW_BUCKETS = 32

#: (tensor id, rows, columns, block width or 0, row_lo, row_hi, col_lo, col_hi); ``rows``
#: chooses the row buckets: above _BUCKET_ABOVE_ROWS, _BUCKET_ROWS rows per bucket, else
#: ``rows`` rows per bucket
Region = tuple[int, int, int, int, int, int, int, int]
#: A tensor's buckets (_LiveAccesses.geometry): rows and columns per bucket, the base of its
#: bucket keys, its bucket keys ever used (an ordered set) and the row buckets of those keys.
_Geometry = tuple[int, int, int, dict[int, None], set[int]]


def regions(a: Access) -> list[Region]:
    """The regions whose overlaps are hazards: the access's bounds in its tensor, or, for a
    directly allocated tile (``TensorDecl.placement``), the physical partitions and byte
    ranges of every logical tile it touches, so tiles placed on the same memory alias."""
    t = a.tensor
    pl = t.placement
    if pl is None:
        rows = t.rows
        if t.space is MemSpace.HBM and rows <= _BUCKET_ABOVE_ROWS and len(t.shape) > 2:
            rows = -(-rows // _HBM_ROW_BUCKETS)  # (rows per bucket)
        return [(t.id, rows, t.row_size, block_elems(t), a.row_lo, a.row_hi, a.col_lo,
                 a.col_hi)]
    per_tile = t.row_size // len(pl.tiles)  # elements of one logical tile per partition
    isz = t.itemsize
    out = []
    if a.col_hi <= a.col_lo:
        return out
    for b in range(a.col_lo // per_tile, (a.col_hi - 1) // per_tile + 1):
        start, addr = pl.tiles[b]
        lo = max(a.col_lo - b * per_tile, 0)
        hi = min(a.col_hi - b * per_tile, per_tile)
        out.append((_PHYSICAL[t.space], _BUCKET_ABOVE_ROWS, _PHYSICAL_BYTES, 0, start + a.row_lo,
                    start + a.row_hi, addr + lo * isz, addr + hi * isz))
    return out


class _LiveAccesses:
    """The live reads and writes of every tensor, indexed by (tensor, row bucket, column
    bucket) (see _BUCKET_ROWS): bucket key -> list of (row_lo, row_hi, col_lo, col_hi, id)."""

    def __init__(self) -> None:
        self.writes: dict[int, list[tuple[int, int, int, int, int]]] = {}
        self.reads: dict[int, list[tuple[int, int, int, int, int]]] = {}
        #: tensor id -> (rows per bucket, columns per bucket, its bucket keys' base, and its
        #: entries of keys_of and row_buckets, at hand)
        self.geometry: dict[int, _Geometry] = {}
        #: tensor id -> its bucket keys ever used, in first-use order (dict as ordered set)
        self.keys_of: dict[int, dict[int, None]] = {}
        #: tensor id -> the row buckets of its keys
        self.row_buckets: dict[int, set[int]] = {}

    def _geometry(self, region: Region) -> _Geometry:
        tid, rows, cols, block = region[0], region[1], region[2], region[3]
        rsize = _BUCKET_ROWS if rows > _BUCKET_ABOVE_ROWS else max(1, rows)
        csize = block or _BUCKET_COLS
        while csize * (_MAX_BLOCK_BUCKETS if block else _MAX_COL_BUCKETS) < cols:
            csize *= 2
        used = self.keys_of[tid] = {}
        buckets = self.row_buckets[tid] = set()
        g = self.geometry[tid] = (rsize, csize, (tid + _TID_BIAS) << _KEY_TID, used, buckets)
        return g

    def _keys(self, region: Region) -> list[int]:
        """The bucket keys of a region, recorded as used by its tensor."""
        g = self.geometry.get(region[0])
        if g is None:
            g = self._geometry(region)
        return self._bucket_keys(g, *region[4:])

    def _access_keys(self, a: Access) -> list[int]:
        """:meth:`_keys` of the one region of an access to a tensor that is not directly
        allocated (the common case, without building the region: speed)."""
        g = self.geometry.get(a.tensor.id)
        if g is None:
            g = self._geometry(regions(a)[0])
        return self._bucket_keys(g, a.row_lo, a.row_hi, a.col_lo, a.col_hi)

    @staticmethod
    def _bucket_keys(g: _Geometry, r_lo: int, r_hi: int, c_lo: int, c_hi: int) -> list[int]:
        rsize, csize, base, used, buckets = g
        rb0, cb0 = r_lo // rsize, c_lo // csize
        rb1 = (r_hi - 1) // rsize if r_hi > r_lo else rb0
        cb1 = (c_hi - 1) // csize if c_hi > c_lo else cb0
        if rb0 == rb1 and cb0 == cb1:  # the common case: one bucket
            key = base | (rb0 << _KEY_ROW) | cb0
            if key not in used:
                used[key] = None
                buckets.add(rb0)
            return [key]
        keys = [base | (rb << _KEY_ROW) | cb
                for rb in range(rb0, rb1 + 1) for cb in range(cb0, cb1 + 1)]
        for key in keys:
            if key not in used:
                used[key] = None
        buckets.update(range(rb0, rb1 + 1))
        return keys

    def pop_all(self, tid: int, found: dict[int, int]) -> None:
        """Edges (WAW from writes, WAR from reads) from every live access of tensor ``tid``,
        which stops being tracked (its memory now belongs to another tile)."""
        for key in self.keys_of.pop(tid, ()):
            for *_, j in self.writes.pop(key, ()):
                found[j] = min(found.get(j, WAW), WAW)
            for *_, j in self.reads.pop(key, ()):
                found[j] = min(found.get(j, WAR), WAR)
        self.geometry.pop(tid, None)
        self.row_buckets.pop(tid, None)

    def touching(self, tid: int, c_lo: int, c_hi: int, found: dict[int, int]) -> None:
        """Edges (WAW from writes, WAR from reads) from every live access of tensor ``tid``
        within columns ``[c_lo, c_hi)``, kept live (other blocks of the tensor may need them)."""
        g = self.geometry.get(tid)
        if g is None:
            return
        used = self.keys_of[tid]
        csize = g[1]
        c0, c1 = c_lo // csize, (max(c_hi, c_lo + 1) - 1) // csize
        rbs = self.row_buckets[tid]
        if len(rbs) * (c1 - c0 + 1) < len(used):  # (a block tensor: its block's buckets)
            base = (tid + _TID_BIAS) << _KEY_TID
            keys = [base | (rb << _KEY_ROW) | cb for rb in rbs for cb in range(c0, c1 + 1)]
        else:
            keys = [key for key in used if c0 <= key & ((1 << _KEY_ROW) - 1) <= c1]
        # (an access listed in several buckets is met once per bucket: same edge, same kind)
        for key in keys:
            for entry in self.writes.get(key, ()):
                _, _, lo, hi, j = entry
                if lo < c_hi and c_lo < hi:
                    found[j] = min(found.get(j, WAW), WAW)
            for entry in self.reads.get(key, ()):
                _, _, lo, hi, j = entry
                if lo < c_hi and c_lo < hi:
                    found[j] = min(found.get(j, WAR), WAR)

    def read(self, a: Access, me: int, found: dict[int, int]) -> list[int]:
        """Record a read; RAW edges from the overlapping live writes. Returns their
        producers."""
        hits: list[int] = []
        if a.tensor.placement is None:  # its one region: the access's bounds
            self._read_at(self._access_keys(a), (a.row_lo, a.row_hi, a.col_lo, a.col_hi, me),
                          found, hits)
        else:
            for region in regions(a):
                self._read(region, me, found, hits)
        return hits

    def write(self, a: Access, me: int, found: dict[int, int]) -> None:
        """Record a write; WAW/WAR edges from the overlapping live accesses, then drop the
        live accesses it covers."""
        if a.tensor.placement is None:
            self._write_at(self._access_keys(a), (a.row_lo, a.row_hi, a.col_lo, a.col_hi, me),
                           found)
        else:
            for region in regions(a):
                self._write(region, me, found)

    def _read(self, region: Region, me: int, found: dict[int, int], hits: list[int]) -> None:
        self._read_at(self._keys(region), (*region[4:], me), found, hits)

    def _write(self, region: Region, me: int, found: dict[int, int]) -> None:
        self._write_at(self._keys(region), (*region[4:], me), found)

    def _read_at(self, keys: list[int], entry: tuple[int, int, int, int, int],
                 found: dict[int, int], hits: list[int]) -> None:
        """Record a read of ``entry`` (its bounds and instruction) in the buckets ``keys``."""
        r_lo, r_hi, c_lo, c_hi, me = entry
        writes, reads = self.writes, self.reads
        for key in keys:
            for w_rlo, w_rhi, w_clo, w_chi, j in writes.get(key, ()):
                if w_rlo < r_hi and r_lo < w_rhi and w_clo < c_hi and c_lo < w_chi and j != me:
                    found[j] = RAW
                    hits.append(j)
            live = reads.get(key)
            if live is None:
                reads[key] = [entry]
            else:
                live.append(entry)

    def _write_at(self, keys: list[int], entry: tuple[int, int, int, int, int],
                  found: dict[int, int]) -> None:
        """Record a write of ``entry`` in the buckets ``keys``."""
        r_lo, r_hi, c_lo, c_hi, me = entry
        for key in keys:
            for kind, table in ((WAW, self.writes), (WAR, self.reads)):
                live = table.get(key)
                if not live:
                    continue
                keep = []
                for old in live:
                    e_rlo, e_rhi, e_clo, e_chi, j = old
                    if (j != me and e_rlo < r_hi and r_lo < e_rhi and e_clo < c_hi
                            and c_lo < e_chi and (j not in found or found[j] > kind)):
                        found[j] = kind
                    if not (r_lo <= e_rlo and e_rhi <= r_hi and c_lo <= e_clo
                            and e_chi <= c_hi):
                        keep.append(old)
                table[key] = keep
            self.writes.setdefault(key, []).append(entry)
