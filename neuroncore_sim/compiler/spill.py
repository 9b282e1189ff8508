"""Placement by live range, and spilling: what the compiler does when the buffer rings of the
compiler-managed tiles of a memory (SBUF or PSUM) do not fit even at their live maxima.

Called by :func:`.capacity.plan_buffers` only then. The model (docs/model.md, "Spilling"):

* Tiles (one per logical block, :mod:`.tiles`) are placed in program order. A tile takes its
  bytes per partition from its first instruction to its last (its live range); a dead tile's
  memory is free again. Free memory is a list of chunks, each remembering the tile that last
  held it; a new tile takes the least recently freed chunks first (the rings' policy), and its
  accesses wait for those tiles' accesses (WAR/WAW). Fragmentation is not modelled (chunks need
  not be contiguous).
* When an instruction needs a tile that is not in the memory (its first use, or a use after it was
  spilled) and there is no room, resident tiles that this instruction does not touch are evicted.
  The victim is the one whose next use is furthest away per byte its eviction moves (Belady's
  choice weighted by cost: a dirty tile costs a save and a reload of its bytes, a clean one a
  reload, a tile never written nothing; ties: the furthest next use, the larger tile, then the
  later key), among the tiles none of the ``lead`` instructions before it touched when there
  is one (SBUF: the compiler issues a reload ahead of its reader, so the tiles those
  instructions use are not its memory). A victim written since it was
  last saved is stored to the next memory first (a *spill save*: SBUF to HBM, PSUM to SBUF); a
  victim whose copy there is current is dropped without a store.
* When the memory spills anyway (the plan without this rule moves bytes), a new tile does not
  take memory whose last tile one of the ``lead`` instructions before it touched while a tile
  untouched for ``lead`` instructions can be evicted instead (Belady's choice among those): the
  compiler issues the DMA that fills a tile ahead of its use, as it issues a reload, so memory
  freed just now would make that DMA wait for the reads of the tile before (WAR). Free memory
  last held by such stale tiles is taken first. A memory that fits by live range is not spilled
  for this. Evidence: NKIBench's lora saves and reloads the loop-reduced accumulators of its
  ``sequential_range`` loop in every iteration (768 MiB each way in its profile) rather than
  making its streamed ``x`` blocks wait for the transposes of the blocks before them (which we
  did: 35.2 ms, TensorE waiting 3.9 ms on them; 33.7 ms with the rule, 30.2 measured);
  Autocomp's attention v2 1.876 -> 1.520 ms (1.569 measured).
* A tile filled only by DMA loads from HBM tensors the kernel never writes (its inputs) is clean:
  the compiler reloads it from where it was loaded (rematerialisation) instead of saving it.
* A tile holding only what memsets wrote (a constant: an eager ``nl.zeros`` block tensor of
  accumulators) is never saved either: the compiler rematerialises it by running its memsets
  again just before its next use (a *remat*, the memsets copied; evicting it moves its bytes
  once, like a clean tile).
* A spilled tile is brought back (a *spill reload*) just before its next use.
* An instruction whose own tiles exceed SBUF cannot run: CapacityError at its line.

The planner returns, per instruction index, the spill DMAs to insert before it and the tiles
whose memory each newly placed tile takes; :mod:`.schedule` turns them into ``dma_copy``
instructions (:mod:`.placement`) and edges (no ring slots for the memory in this case).
"""

from __future__ import annotations

import bisect
import heapq
from collections import deque
from dataclasses import dataclass, field
from typing import Callable

from ..errors import CapacityError
from ..program.ir import Instruction, MemSpace, Opcode, TensorDecl
from ..program.opcodes import DMA_OPCODES
from .evictable import NEVER, Evictable, eviction_bytes
from .tiles import access_keys, tile_cols

#: Opcodes of the spill DMAs the compiler adds: SBUF to HBM and back. Their Instruction is a
#: dma_copy; the timing model's events name them.
SPILL_SAVE = "spill_save"
SPILL_RELOAD = "spill_reload"
#: The same for PSUM, spilled to SBUF by VectorE copies (their Instruction is a tensor_copy).
PSUM_SPILL_SAVE = "psum_spill_save"
PSUM_SPILL_RELOAD = "psum_spill_reload"
#: A constant tile's memsets run again instead of a reload; its Instruction is a copy of the
#: memset.
SPILL_REMAT = "spill_remat"

#: A hoisted input site whose tiles live at once take more than this share of the memory is
#: streamed once one of its tiles is evicted (assumption from one measurement: NKIBench's
#: matmul_M4096_N12288 reads its 160 KiB-per-partition right-hand side, of 176 KiB, again for
#: every matmul; docs/model.md, "Spilling").
STREAMED_SITE_SHARE = 0.5


@dataclass(frozen=True, slots=True)
class SpillOp:
    """One spill DMA to insert before an instruction.

    Attributes:
        kind: SBUF: ``spill_save`` (to HBM) or ``spill_reload`` (back); PSUM:
            ``psum_spill_save`` (to SBUF) or ``psum_spill_reload`` (events.py); either:
            ``spill_remat`` (the tile's memsets run again).
        key: the tile (:mod:`.tiles` key).
        takes: for a reload, the tiles whose memory it takes (it waits for their accesses).
        memsets: for a remat, the indices of the memsets that filled the tile.
        cols: for a reload of a streamed tile, the columns its reader reads (start within the
            tile, count); None: the whole tile.
    """

    kind: str
    key: int
    takes: tuple[int, ...] = ()
    memsets: tuple[int, ...] = ()
    cols: tuple[int, int] | None = None


@dataclass(slots=True)
class SpillPlan:
    """The SBUF placement and spills of one SPMD instance.

    Attributes:
        before: instruction index -> the spill DMAs to run before it (saves, then reloads).
        takes: instruction index -> (tile, tiles whose memory it takes) for each tile the
            instruction uses first.
        saved_sites: allocation site -> bytes (all partitions) its tiles' spill saves store.
        reloaded_sites: allocation site -> bytes its tiles' spill reloads bring back.
        save_bytes: bytes moved by spill saves (all partitions).
        reload_bytes: bytes moved by spill reloads.
        remat_bytes: bytes rewritten by the memsets of rematerialised constant tiles.
        remat_sites: allocation site -> those bytes.
        demand: the most bytes per partition of tiles live at once (resident or spilled).
        capacity: SBUF bytes per partition the compiler-managed tiles could use.
        partial: planning stopped after the first instruction with a spill save or reload
            (``plan_spills(..., stop_at_move=True)``): only whether it moves bytes is known.
    """

    before: dict[int, list[SpillOp]] = field(default_factory=dict)
    takes: dict[int, list[tuple[int, tuple[int, ...]]]] = field(default_factory=dict)
    saved_sites: dict[str, int] = field(default_factory=dict)
    reloaded_sites: dict[str, int] = field(default_factory=dict)
    save_bytes: int = 0
    reload_bytes: int = 0
    remat_bytes: int = 0
    remat_sites: dict[str, int] = field(default_factory=dict)
    demand: int = 0
    capacity: int = 0
    partial: bool = False

    @property
    def spilled(self) -> bool:
        """True when something is spilled (there are spill DMAs)."""
        return bool(self.before)


def plan_spills(instrs: list[Instruction], split: dict[int, int], decls: dict[int, TensorDecl],
                last: dict[int, int], capacity: int,
                size_of: Callable[[TensorDecl], int], placed: int = 0,
                space: MemSpace = MemSpace.SBUF, stop_at_move: bool = False,
                lead: int = 0, fresh: bool | None = None, beyond: int = 0) -> SpillPlan:
    """Place the ``space`` tiles of one instance in program order (module docstring).

    Args:
        split: tensor id -> elements per block tile (0: one tile), from the capacity pass.
        decls, last: tile key -> tensor, last use index.
        capacity: bytes per partition left for compiler-managed tiles.
        size_of: bytes per partition of one tile of a tensor (PSUM: whole banks).
        placed: bytes per partition directly allocated tiles take (named in the error).
        space: SBUF (spills go to HBM) or PSUM (spills go to SBUF).
        stop_at_move: stop after the first instruction with a spill save or reload (a
            ``partial`` plan, for a caller that only asks whether the plan moves bytes).
        lead: how many instructions ahead of its reader a reload is issued: the tiles the
            ``lead`` instructions before an instruction touched are not evicted for it while
            another tile can be (module docstring).
        fresh: whether a new tile may take memory only tiles untouched for ``lead``
            instructions held, evicting for it tiles next used more than ``beyond``
            instructions later (module docstring). None: when the plan without it moves bytes
            (a memory that fits by live range is not spilled for this).
        beyond: see ``fresh`` (the scheduler's window, ``reorder_window_instructions``).

    Returns:
        The plan (``spilled`` False when the tiles fit by live range).

    Raises:
        CapacityError: one instruction's own tiles exceed ``capacity``.
    """
    if lead and fresh is None:
        args = (instrs, split, decls, last, capacity, size_of, placed, space, stop_at_move, lead)
        plain = plan_spills(*args, fresh=False)
        if plain.partial or not (plain.save_bytes or plain.reload_bytes or plain.remat_bytes):
            return plain
        return plan_spills(*args, fresh=True, beyond=beyond)
    save_kind, reload_kind = ((SPILL_SAVE, SPILL_RELOAD) if space is MemSpace.SBUF
                              else (PSUM_SPILL_SAVE, PSUM_SPILL_RELOAD))
    touched, written, loaded, uses, memset = _scan(instrs, split, space)
    size = {k: size_of(t) for k, t in decls.items() if t.space is space}
    plan = SpillPlan(capacity=capacity)
    resident: dict[int, int] = {}
    out: set[int] = set()  # spilled and still live
    dirty: set[int] = set()  # written since its last save
    saved: set[int] = set()  # has an HBM copy
    const: dict[int, list[int]] = {}  # tile -> the memsets that alone filled it
    from_input: set[int] = set()  # filled by loads of kernel inputs alone (reloadable)
    streamed: set[object] = set()  # sites whose input tiles are loaded again at each read
    hoisted = _hoisted(instrs, loaded, uses, decls, size, capacity)
    ends: list[tuple[int, int]] = []  # (last use, key) of tiles placed
    free: deque[list[int]] = deque([[capacity, -1]])  # [bytes, last holder] oldest first
    used = out_bytes = 0
    evictable = Evictable(lead)

    def evict(v: int, at: int) -> None:
        """Evict ``v`` before instruction ``at`` (a save first when it is dirty)."""
        nonlocal used, out_bytes
        if v in hoisted and v in from_input and v not in dirty:
            streamed.add(_site(decls[v]))
        used -= resident.pop(v)
        free.append([size[v], v])
        out.add(v)
        out_bytes += size[v]
        if v in dirty:
            dirty.discard(v)
            saved.add(v)
            plan.before.setdefault(at, []).append(SpillOp(save_kind, v))
            nbytes = size[v] * decls[v].rows
            plan.save_bytes += nbytes
            site = str(decls[v].site) if decls[v].site is not None else decls[v].name
            plan.saved_sites[site] = plan.saved_sites.get(site, 0) + nbytes

    for i, keys in enumerate(touched):
        while ends and ends[0][0] < i:  # dead tiles free their memory
            _, k = heapq.heappop(ends)
            if k in resident:
                used -= resident.pop(k)
                free.append([size[k], k])
            elif k in out:
                out.discard(k)
                out_bytes -= size[k]
        need = [k for k in keys if k in size]
        if sum(size[k] for k in need) > capacity:
            _too_big(instrs[i], need, decls, size, capacity, placed, space)
        for k in need:
            if k in resident:
                continue
            while used + size[k] > capacity:
                evict(evictable.victim(resident, need, i), i)
            if fresh:  # memory the last `lead` instructions' tiles held is not taken
                since = i - lead
                stale = _stale_first(free, evictable.used_at, since)
                evicted = False
                while stale < size[k]:
                    v = evictable.stale_victim(resident, need, i, since, beyond)
                    if v < 0:
                        break
                    evict(v, i)  # (its memory is stale: nothing since `since` touched it)
                    stale += size[v]
                    evicted = True
                if evicted:  # (its chunks went to the end, behind the recent ones)
                    _stale_first(free, evictable.used_at, since)
            holders = _take(free, size[k])
            if k in out:
                out.discard(k)
                out_bytes -= size[k]
                if k in const:  # a constant: its memsets run again
                    plan.before.setdefault(i, []).append(
                        SpillOp(SPILL_REMAT, k, holders, tuple(const[k])))
                    nbytes = size[k] * decls[k].rows
                    plan.remat_bytes += nbytes
                    site = str(decls[k].site) if decls[k].site is not None else decls[k].name
                    plan.remat_sites[site] = plan.remat_sites.get(site, 0) + nbytes
                    holders = ()
                elif k in saved:  # (a tile never written has nothing to bring back)
                    cols = None
                    if (k in from_input and k in hoisted and _site(decls[k]) in streamed
                            and k not in written[i] and k not in loaded[i]):
                        cols = _read_cols(instrs[i], k, decls[k], split)
                    nbytes = size[k] * decls[k].rows
                    if cols is not None:
                        lo, hi = tile_cols(k, decls[k])
                        nbytes = nbytes * cols[1] // (hi - lo)
                    plan.before.setdefault(i, []).append(SpillOp(reload_kind, k, holders,
                                                                 cols=cols))
                    plan.reload_bytes += nbytes
                    site = str(decls[k].site) if decls[k].site is not None else decls[k].name
                    plan.reloaded_sites[site] = plan.reloaded_sites.get(site, 0) + nbytes
                    holders = ()
            else:
                heapq.heappush(ends, (last[k], k))
            plan.takes.setdefault(i, []).append((k, holders))
            resident[k] = size[k]
            used += size[k]
        plan.demand = max(plan.demand, used + out_bytes)
        if stop_at_move and (plan.save_bytes or plan.reload_bytes):
            plan.partial = True
            break
        for k in written[i]:
            dirty.add(k)
            const.pop(k, None)
            from_input.discard(k)
        for k in memset[i]:  # a constant unless it holds computed values
            if k not in dirty:
                const.setdefault(k, []).append(i)
        for k in loaded[i]:  # filled from an input: reloadable from it unless already dirty
            if k not in dirty:
                saved.add(k)
                from_input.add(k)
        for k in need:  # (their next use and eviction cost change only here)
            u = uses[k]
            j = bisect.bisect_right(u, i)
            evictable.push(k, u[j] if j < len(u) else NEVER, resident[k],
                           eviction_bytes(k, size[k] * decls[k].rows, dirty, saved, const), i)
        for k in need:  # a streamed site's tile leaves after each read (clean: no save)
            if (k in resident and k in from_input and k in hoisted and k not in dirty
                    and _site(decls[k]) in streamed and k not in loaded[i]):
                used -= resident.pop(k)
                free.append([size[k], k])
                out.add(k)
                out_bytes += size[k]
    for ops in plan.before.values():  # saves free memory the reloads take: saves first
        ops.sort(key=lambda op: op.kind != save_kind)
    return plan


def _hoisted(instrs: list[Instruction], loaded: list[tuple[int, ...]],
             uses: dict[int, list[int]], decls: dict[int, TensorDecl], size: dict[int, int],
             capacity: int) -> set[int]:
    """The tiles the compiler streams once one of them is evicted: tiles loaded from a kernel
    input outside a loop that reads them in more than one of its iterations (a load the
    kernel hoisted out of the loop), of an allocation site whose such tiles live at once take
    more than STREAMED_SITE_SHARE of ``capacity`` (docs/model.md, "Spilling")."""
    out: set[int] = set()
    for i, keys in enumerate(loaded):
        if not keys:
            continue
        around = {loop for loop, _ in instrs[i].loops}
        for k in keys:
            seen: dict[int, int] = {}
            for j in uses.get(k, ()):
                for loop, it in instrs[j].loops:
                    if loop not in around and seen.setdefault(loop, it) != it:
                        out.add(k)
                        break
                if k in out:
                    break
    events: dict[object, list[tuple[int, int]]] = {}  # site -> (index, +-bytes) of its tiles
    for k in out:
        u = uses[k]
        events.setdefault(_site(decls[k]), []).extend(((u[0], size[k]), (u[-1] + 1, -size[k])))
    big: set[object] = set()
    for site, ev in events.items():
        live = peak = 0
        for _, b in sorted(ev):
            live += b
            peak = max(peak, live)
        if peak > STREAMED_SITE_SHARE * capacity:
            big.add(site)
    return {k for k in out if _site(decls[k]) in big}


def _site(t: TensorDecl) -> object:
    """A tile's allocation site (the tensor without one)."""
    return t.site if t.site is not None else t.id


def _read_cols(ins: Instruction, k: int, t: TensorDecl, split: dict[int, int]
               ) -> tuple[int, int] | None:
    """The columns of tile ``k`` that ``ins`` reads, (start within the tile, count), when it
    reads one run of columns across all the tile's partitions; None otherwise."""
    lo, hi = tile_cols(k, t)
    for a in ins.srcs.values():
        if a.tensor.id != t.id or k not in access_keys(a, split[t.id]):
            continue
        pat = a.pattern
        if (len(pat) != 2 or tuple(pat[0]) != (t.row_size, t.rows) or pat[1][0] != 1
                or a.offset >= t.row_size):
            return None
        start, n = a.offset, pat[1][1]
        if lo <= start and start + n <= hi:
            return start - lo, n
        return None
    return None


def _stale_first(free: deque[list[int]], used_at: dict[int, int], since: int) -> int:
    """Put the free chunks whose last holder no instruction from ``since`` on touched first
    (each group in its order); their bytes."""
    stale, recent = [], []
    for c in free:
        (stale if c[1] < 0 or used_at.get(c[1], -1) < since else recent).append(c)
    if recent and stale:
        free.clear()
        free.extend(stale + recent)
    return sum(c[0] for c in stale)


def _take(free: deque[list[int]], nbytes: int) -> tuple[int, ...]:
    """Take ``nbytes`` from the least recently freed chunks; the tiles that last held them."""
    holders: list[int] = []
    while nbytes > 0:
        chunk = free[0]
        if chunk[1] >= 0 and chunk[1] not in holders:
            holders.append(chunk[1])
        if chunk[0] <= nbytes:
            nbytes -= chunk[0]
            free.popleft()
        else:
            chunk[0] -= nbytes
            nbytes = 0
    return tuple(holders)


def _scan(instrs: list[Instruction], split: dict[int, int], space: MemSpace
          ) -> tuple[list[tuple[int, ...]], list[tuple[int, ...]], list[tuple[int, ...]],
                     dict[int, list[int]], list[tuple[int, ...]]]:
    """Per instruction: the ``space`` tile keys it touches, those it writes with a value that
    exists nowhere else (dirty), those it fills from a kernel input (a DMA load whose sources
    are all HBM tensors nothing writes); per key its uses; per instruction the keys a memset
    writes (a constant)."""
    written_hbm = {a.tensor.id for ins in instrs for a in ins.dsts.values()
                   if a.tensor.space is MemSpace.HBM}
    touched: list[tuple[int, ...]] = []
    written: list[tuple[int, ...]] = []
    loaded: list[tuple[int, ...]] = []
    uses: dict[int, list[int]] = {}
    memset: list[tuple[int, ...]] = []
    for i, ins in enumerate(instrs):
        is_memset = ins.opcode is Opcode.MEMSET and not ins.srcs
        from_input = (ins.opcode in DMA_OPCODES and bool(ins.srcs)
                      and all(a.tensor.space is MemSpace.HBM and a.tensor.id not in written_hbm
                              for a in ins.srcs.values()))
        seen: dict[int, None] = {}
        wrote: list[int] = []
        for a, is_write in ins.accesses():
            t = a.tensor
            if t.space is not space or t.placement is not None:
                continue
            for k in access_keys(a, split[t.id]):
                seen[k] = None
                if is_write:
                    wrote.append(k)
        for k in seen:
            uses.setdefault(k, []).append(i)
        touched.append(tuple(seen))
        written.append(() if from_input or is_memset else tuple(wrote))
        loaded.append(tuple(wrote) if from_input else ())
        memset.append(tuple(wrote) if is_memset else ())
    return touched, written, loaded, uses, memset


def _too_big(ins: Instruction, need: list[int], decls: dict[int, TensorDecl],
             size: dict[int, int], capacity: int, placed: int, space: MemSpace) -> None:
    names = ", ".join(f"{decls[k].site or decls[k].name} ({size[k]} B)"
                      for k in sorted(need, key=lambda k: -size[k]))
    if placed:
        names += f" (directly allocated tiles take another {placed} bytes per partition)"
    raise CapacityError(
        f"{space.value.upper()} capacity: {ins.opcode.value} needs its tiles in "
        f"{space.value.upper()} at once (spilling cannot "
        f"help); expected at most {capacity} bytes per partition, found "
        f"{sum(size[k] for k in need)}; tiles allocated at: {names}", loc=str(ins.loc) if ins.loc is not None else None)
