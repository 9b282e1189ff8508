"""On-chip memory capacity: the buffer rings the compiler gives each allocation site, from the
live ranges of the tiles a kernel allocates, and whether they fit in SBUF / PSUM.

The timing model (:mod:`.schedule`, through :mod:`.placement`) uses the rings to assign tiles to
physical buffers; a functional-only run (``simulate(..., timing=False)``,
``nki.simulate_kernel``) calls :func:`.placement.check_capacity`, so the same errors and spill
warnings come with or without timing.

The model. The tiles allocated at one source line (``TensorDecl.site``) share a ring of physical
buffers: ``min(tiles at the site, max(loop_tile_buffers, most tiles of the site live at once))``;
a tile is live from the first to the last instruction touching it. One ring slot is the site's
largest row in SBUF (``sbuf_usable_bytes_per_partition``: 192 KiB per partition less what the
compiler reserves), or ``ceil(row_bytes / bank)`` whole 2 KiB banks in PSUM (8 banks, 16 KiB),
as in direct allocation. When the rings of a memory exceed its capacity they shrink one buffer at
a time down to their live maximum, the ring with the most buffers above its live maximum first,
so every ring keeps double buffering as long as any ring has more (:func:`_fit`); if that is
still too much, the memory is placed by live range and spilled (below).
A *tile* is one logical block of a tensor: a tensor declared with block dims
(``nl.ndarray((B0, B1, nl.par_dim(P), F), ...)``) is ``B0 * B1`` tiles, each with its own live
range (the accesses that touch its columns), as the compiler allocates them; a tensor without
block dims is one tile. Tile keys (:func:`tile_key`) are the tensor id for a tensor without block
dims and ``id + (block << 32)`` for block ``block`` of a block tensor.

Over-subscription is not an error: when the rings of a memory do not fit even at their live
maxima, the compiler places its tiles by live range and spills what does not fit to the next
memory (the NKI programming model: "the Neuron compiler inserts the necessary spills or refills
between that memory and the next-tier memory"): SBUF to HBM, PSUM to SBUF (:mod:`.spill`,
:mod:`.placement`). Only an instruction whose own tiles exceed a memory, and directly allocated
tiles past the usable memory, are a CapacityError.

SPMD instances run one after another, so each instance is checked on its own.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass
from typing import Iterable

from ..config import NeuronCoreConfig
from ..program.ir import Instruction, MemSpace, TensorDecl
from .spill import SpillPlan, plan_spills
from .tiles import BLOCK_SHIFT, block_elems, site_key, tile_bytes

@dataclass(frozen=True, slots=True)
class BufferRing:
    """The physical buffers given to one allocation site.

    Attributes:
        site: the allocating source line ("file.py:LINE"), or "tensor <name>" without a site.
        space: SBUF or PSUM.
        tiles: how many tiles the site allocated.
        live_max: the most of its tiles live at once.
        buffers: ring size after any shrinking.
        slot_bytes: bytes per partition of one buffer (PSUM: whole banks).
    """

    site: str
    space: MemSpace
    tiles: int
    live_max: int
    buffers: int
    slot_bytes: int


@dataclass(frozen=True, slots=True)
class BufferPlan:
    """The rings of one SPMD instance and the live ranges they were made from.

    Attributes:
        rings: one ring per allocation site, in order of the site's first use.
        site_tiles: per ring (same order), the tile keys (:func:`tile_key`) of its tiles in
            first-use order.
        first: tile key -> index (in the instance's instruction list) of its first use.
        last: tile key -> index of its last use.
        split: tensor id -> :func:`block_elems` of every on-chip tensor touched (0: one tile).
        decls: tile key -> its tensor.
        spill: when the SBUF rings do not fit at their live maxima: the placement by live range
            and what the compiler spills to HBM (:mod:`.spill`); None otherwise, and None when
            ``psum_spill`` is set (the caller plans SBUF again with the PSUM spill copies).
        psum_spill: the same for PSUM (spills go to SBUF); None when PSUM fits in its rings
            or was planned already (``plan_buffers(..., psum_planned=True)``).
        room: SBUF bytes per partition left to compiler-managed tiles (what directly
            allocated tiles leave of the usable SBUF).
    """

    rings: tuple[BufferRing, ...]
    site_tiles: tuple[tuple[int, ...], ...]
    first: dict[int, int]
    last: dict[int, int]
    split: dict[int, int]
    decls: dict[int, TensorDecl]
    spill: SpillPlan | None = None
    psum_spill: SpillPlan | None = None
    room: int = 0


def plan_buffers(instrs: list[Instruction], config: NeuronCoreConfig,
                 psum_planned: bool = False, psum_probe: bool = False) -> BufferPlan:
    """The buffer rings of one instance's instructions (see the module docstring), and the
    placement and spill plans of the memories over-subscribed at the rings' live maxima.

    Args:
        psum_planned: PSUM was placed already (the caller inserted its spills): no PSUM plan.
        psum_probe: the PSUM plan stops at its first spill save or reload (``partial``).

    Raises:
        CapacityError: an instruction's own tiles do not fit in SBUF or PSUM.
    """
    first: dict[int, int] = {}
    last: dict[int, int] = {}
    decls: dict[int, TensorDecl] = {}
    placed: dict[int, TensorDecl] = {}
    split: dict[int, int] = {}
    hbm = MemSpace.HBM
    shift = BLOCK_SHIFT
    for i, ins in enumerate(instrs):
        for operands in (ins.srcs, ins.dsts):  # sources first, as Instruction.accesses()
            for a in operands.values():
                t = a.tensor
                if t.space is hbm:
                    continue
                tid = t.id
                if t.placement is not None:  # directly allocated: no ring, its own addresses
                    placed[tid] = t
                    continue
                per = split.get(tid)
                if per is None:
                    per = split[tid] = block_elems(t)
                if per == 0:
                    if tid not in first:
                        first[tid] = i
                        decls[tid] = t
                    last[tid] = i
                    continue
                hi = (max(a.col_hi, a.col_lo + 1) - 1) // per
                for b in range(a.col_lo // per, hi + 1):
                    key = tid + (b << shift)
                    if key not in first:
                        first[key] = i
                        decls[key] = t
                    last[key] = i
    sites: dict[tuple[object, ...], list[int]] = {}
    of_tensor: dict[int, list[int]] = {}  # tensor id -> its site's list (a key made per tensor)
    for key in first:  # insertion order = order of first use
        t = decls[key]
        keys = of_tensor.get(t.id)
        if keys is None:
            keys = of_tensor[t.id] = sites.setdefault(site_key(t), [])
        keys.append(key)
    rings = [_ring(keys, decls, first, last, config) for keys in sites.values()]
    placed_bytes = _placed_bytes(placed.values(), config)
    rings, over = _fit(rings, config, placed_bytes)
    spill = psum_spill = None
    psum_over = MemSpace.PSUM in over and not psum_planned
    # Over-subscribed at the rings' live maxima: place by live range. (When PSUM spills, the
    # caller plans again with the PSUM spill copies inserted: no SBUF plan here.)
    if MemSpace.SBUF in over and not psum_over:
        sb = MemSpace.SBUF
        spill = plan_spills(instrs, split, decls, last, _capacity(sb, config, placed_bytes),
                            tile_bytes, placed_bytes[sb], sb,
                            lead=config.spill_reload_lead_instructions,
                            beyond=config.reorder_window_instructions)
    if psum_over:
        ps = MemSpace.PSUM
        bank = config.psum_bank_bytes
        psum_spill = plan_spills(instrs, split, decls, last,
                                 _capacity(ps, config, placed_bytes),
                                 lambda t: math.ceil(tile_bytes(t) / bank) * bank,
                                 placed_bytes[ps], ps, stop_at_move=psum_probe)
    return BufferPlan(tuple(rings), tuple(tuple(t) for t in sites.values()), first, last,
                      split, decls, spill, psum_spill,
                      _capacity(MemSpace.SBUF, config, placed_bytes))


def _capacity(space: MemSpace, config: NeuronCoreConfig, placed: dict[MemSpace, int]) -> int:
    """Bytes per partition of ``space`` left to compiler-managed tiles."""
    total = (config.sbuf_usable_bytes_per_partition if space is MemSpace.SBUF
             else config.psum_bytes_per_partition)
    return max(0, total - placed[space])  # (direct allocation may reach into the reserve)


def _ring(tids: list[int], decls: dict[int, TensorDecl], first: dict[int, int],
          last: dict[int, int], config: NeuronCoreConfig) -> BufferRing:
    live: list[int] = []
    live_max = 0
    for tid in tids:  # sorted by first use
        while live and live[0] < first[tid]:
            heapq.heappop(live)
        heapq.heappush(live, last[tid])
        live_max = max(live_max, len(live))
    t0 = decls[tids[0]]
    # A block tensor's blocks are tiles of one generation: the allocator rotates
    # loop_tile_buffers generations of them, as it rotates plain tiles (so the next iteration's
    # blocks can load while this one's are read).
    generation: dict[int, int] = {}  # tensor id -> its tiles here
    row_bytes = 0
    for tid in tids:
        t = decls[tid]
        n = generation.get(t.id)
        if n is None:  # (tile bytes once per tensor)
            row_bytes = max(row_bytes, tile_bytes(t))
        generation[t.id] = (n or 0) + 1
    if t0.space is MemSpace.PSUM:
        slot = math.ceil(row_bytes / config.psum_bank_bytes) * config.psum_bank_bytes
    else:
        slot = row_bytes
    site = str(t0.site) if t0.site is not None else f"tensor {t0.name}"
    buffers = min(len(tids), max(config.loop_tile_buffers * max(generation.values()), live_max))
    return BufferRing(site, t0.space, len(tids), live_max, buffers, slot)


def _placed_bytes(placed: Iterable[TensorDecl], config: NeuronCoreConfig) -> dict[MemSpace, int]:
    """Bytes per partition that directly allocated tiles take from the allocator, per space:
    the union of their byte ranges (whatever their partitions); in PSUM, whole banks."""
    spans: dict[MemSpace, set[tuple[int, int]]] = {MemSpace.SBUF: set(), MemSpace.PSUM: set()}
    bank = config.psum_bank_bytes
    for t in placed:
        pl = t.placement
        assert pl is not None
        for _, addr in pl.tiles:
            if t.space is MemSpace.PSUM:
                spans[t.space].add((addr // bank * bank, (addr // bank + 1) * bank))
            else:
                spans[t.space].add((addr, addr + pl.tile_bytes))
    out = {}
    for space, ranges in spans.items():
        total, end = 0, -1
        for lo, hi in sorted(ranges):
            if hi > end:
                total += hi - max(lo, end)
                end = hi
        out[space] = total
    return out


def _fit(rings: list[BufferRing], config: NeuronCoreConfig,
         placed: dict[MemSpace, int]) -> tuple[list[BufferRing], set[MemSpace]]:
    """Shrink rings towards their live maximum until each space fits in what directly allocated
    tiles leave free, keeping every ring's prefetch depth (buffers above its live maximum) as
    even as possible; then give buffers back where they still fit (docs/model.md).

    Returns:
        (rings, over): ``over`` holds the memories that do not fit even at the live maxima
        (their rings are then at their live maxima; the caller places them by live range).
    """
    capacity = {space: _capacity(space, config, placed) for space in (MemSpace.SBUF,
                                                                       MemSpace.PSUM)}
    rings = list(rings)
    over: set[MemSpace] = set()
    for space, cap in capacity.items():
        idx = [k for k, r in enumerate(rings) if r.space is space]
        wanted = {k: rings[k].buffers for k in idx}
        total = sum(rings[k].buffers * rings[k].slot_bytes for k in idx)
        while total > cap:
            k = _next_to_shrink([(k, rings[k]) for k in idx], total - cap)
            if k is None:
                over.add(space)
                break
            rings[k] = _resized(rings[k], -1)
            total -= rings[k].slot_bytes
        while True:  # a shrink the later ones made unnecessary is undone
            room = [k for k in idx if rings[k].buffers < wanted[k]
                    and total + rings[k].slot_bytes <= cap]
            if not room:
                break
            k = min(room, key=lambda j: (_spare(rings[j]), rings[j].slot_bytes, j))
            rings[k] = _resized(rings[k], +1)
            total += rings[k].slot_bytes
    return rings, over


def _next_to_shrink(rings: list[tuple[int, BufferRing]], over: int) -> int | None:
    """The ring that loses a buffer next: one with the most spare buffers (its prefetch depth);
    among those the smallest whose buffer alone covers the ``over`` bytes (the cheapest load to
    stop prefetching), else the largest (the fewest shrinks). None: nothing left to shrink."""
    shrinkable = [(k, r) for k, r in rings if r.buffers > r.live_max]
    if not shrinkable:
        return None
    most = max(_spare(r) for _, r in shrinkable)
    level = [(k, r) for k, r in shrinkable if _spare(r) == most]
    enough = [(r.slot_bytes, k) for k, r in level if r.slot_bytes >= over]
    if enough:
        return min(enough)[1]
    return max(level, key=lambda kr: (kr[1].slot_bytes, -kr[0]))[0]


def _spare(r: BufferRing) -> int:
    return r.buffers - r.live_max


def _resized(r: BufferRing, delta: int) -> BufferRing:
    return BufferRing(r.site, r.space, r.tiles, r.live_max, r.buffers + delta, r.slot_bytes)
