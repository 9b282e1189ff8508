"""The memory plan of one SPMD instance: buffer rings, placement by live range where the rings
do not fit, and the spill instructions the compiler inserts (docs/model.md, "Spilling").

Order: PSUM first. When the PSUM rings do not fit at their live maxima, PSUM tiles are placed by
live range (:mod:`.spill`) and what does not fit is spilled to SBUF, the next memory: a spill
save is a VectorE ``tensor_copy`` from the PSUM tile to an SBUF tile of the same allocation
site, a reload the copy back. Those SBUF tiles then take SBUF like any other, so SBUF is planned
on the stream with the PSUM spill copies. When the SBUF rings do not fit, SBUF tiles are placed
by live range and spilled to HBM: ``dma_copy`` to an HBM scratch tensor and back.

Inserted instructions get ids after the Program's (``attrs["spill"]`` names them:
"spill_save" / "spill_reload" for SBUF, "psum_spill_save" / "psum_spill_reload" for PSUM,
"spill_remat" for the copied memsets that rematerialise a constant tile, which is also their
event opcode) and the allocation line of the spilled tile. The Program and the
values are unchanged: spills only move data.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..config import NeuronCoreConfig
from ..errors import SpillWarning
from ..program.ir import Access, Engine, Instruction, MemSpace, Opcode, Program, TensorDecl
from .capacity import BufferPlan, plan_buffers
from .spill import PSUM_SPILL_SAVE, SPILL_REMAT, SPILL_SAVE, SpillPlan
from .tiles import tile_cols

#: Tile -> the tiles whose memory it takes, per instruction id (see :class:`InstancePlan`).
Takes = dict[int, list[tuple[int, tuple[int, ...]]]]


class NewIds:
    """Ids for the instructions and tensors the plan adds (spill copies, spill space): after
    the Program's own, unique across instances."""

    def __init__(self, instructions: int, tensors: int) -> None:
        self.instruction, self.tensor = instructions, tensors

    def next_instruction(self) -> int:
        """A fresh instruction id."""
        self.instruction += 1
        return self.instruction - 1

    def next_tensor(self) -> int:
        """A fresh tensor id."""
        self.tensor += 1
        return self.tensor - 1

    @classmethod
    def after(cls, program: Program) -> NewIds:
        """Ids after ``program``'s instructions and tensors."""
        return cls(len(program.instructions), len(program.tensors))


@dataclass(frozen=True, slots=True)
class InstancePlan:
    """The memory plan of one instance.

    Attributes:
        instrs: its instructions with the spill copies inserted, in order.
        plan: rings and the SBUF plan (made on ``planned``).
        planned: the stream ``plan``'s instruction indices (``first``, ``last``) refer to:
            ``instrs`` without the SBUF spill copies (inserted after planning).
        psum: the PSUM placement and spills (None when the PSUM rings fit).
        takes: instruction id -> (tile, tiles whose memory it takes) for each tile placed by live
            range that the instruction brings into memory (first use or reload).
        unringed: tiles placed by live range, which get no ring slot.
    """

    instrs: list[Instruction]
    plan: BufferPlan
    planned: list[Instruction]
    psum: SpillPlan | None
    takes: Takes
    unringed: frozenset[int]


def plan_instance(instrs: list[Instruction], config: NeuronCoreConfig, ids: NewIds,
                  plan: BufferPlan | None = None) -> InstancePlan:
    """Rings, placements and spill copies of one instance's instructions (module docstring);
    ``plan``: ``plan_buffers(instrs, config)`` when the caller has it already.

    Raises:
        CapacityError: one instruction's own tiles exceed SBUF or PSUM.
    """
    if plan is None:
        plan = plan_buffers(instrs, config)
    takes: Takes = {}
    unringed: set[int] = set()
    psum = plan.psum_spill
    if psum is not None:
        unringed |= {k for k, t in plan.decls.items() if t.space is MemSpace.PSUM}
        instrs = _with_spills(instrs, psum, plan.decls, ids, takes)
        plan = plan_buffers(instrs, config, psum_planned=True)
    planned = instrs
    if plan.spill is not None:
        unringed |= {k for k, t in plan.decls.items() if t.space is MemSpace.SBUF}
        instrs = _with_spills(instrs, plan.spill, plan.decls, ids, takes)
    return InstancePlan(instrs, plan, planned, psum, takes, frozenset(unringed))


def check_capacity(program: Program, config: NeuronCoreConfig) -> list[SpillWarning]:
    """Plan every SPMD instance's memory as the timing model does, without timing.

    Returns:
        The SpillWarnings of the launch (:func:`spill_warnings`), for the caller to show.

    Raises:
        CapacityError: one instruction's own tiles exceed SBUF or PSUM.
    """
    by_instance: dict[int, list[Instruction]] = {}
    for ins in program.instructions:
        by_instance.setdefault(ins.instance, []).append(ins)
    ids = NewIds.after(program)
    return spill_warnings([plan_instance(by_instance[k], config, ids)
                           for k in sorted(by_instance)])


def spill_warnings(plans: list[InstancePlan]) -> list[SpillWarning]:
    """One SpillWarning per memory that some instance spills: the sites spilled most with the
    bytes their saves and reloads move, the live demand and the capacity; the message starts
    with the top site's line."""
    out = []
    for space, spills, to in ((MemSpace.PSUM, [p.psum for p in plans], "SBUF"),
                              (MemSpace.SBUF, [p.plan.spill for p in plans], "HBM")):
        spilled = [sp for sp in spills if sp is not None and sp.spilled]
        if not spilled:
            continue
        sites: dict[str, int] = {}
        for sp in spilled:
            for moved in (sp.saved_sites, sp.reloaded_sites, sp.remat_sites):
                for site, b in moved.items():
                    sites[site] = sites.get(site, 0) + b
        order = sorted(sites.items(), key=lambda kv: (-kv[1], kv[0]))
        parts = ", ".join(f"{site} ({b} bytes)" for site, b in order[:6])
        more = f" and {len(order) - 6} more" if len(order) > 6 else ""
        lead = order[0][0] if order and ":" in order[0][0] else "kernel"
        remat_bytes = sum(sp.remat_bytes for sp in spilled)
        remat = (f" (and rewrites {remat_bytes} bytes of evicted memset constants by their "
                 f"memsets)" if remat_bytes else "")
        out.append(SpillWarning(
            f"{lead}: {space.value.upper()} over-subscribed: tiles live at once need up to "
            f"{max(sp.demand for sp in spilled)} bytes per partition, {spilled[0].capacity} "
            f"available; the compiler spills to {to} {sum(sp.save_bytes for sp in spilled)} "
            f"bytes (spill stores) and reloads {sum(sp.reload_bytes for sp in spilled)} bytes"
            f"{remat}; "
            f"spilled allocation sites (bytes stored and reloaded{', or rewritten' if remat else ''}"
            f"): {parts}{more}"))
    return out


def _with_spills(instrs: list[Instruction], sp: SpillPlan, decls: dict[int, TensorDecl],
                 ids: NewIds, takes: Takes) -> list[Instruction]:
    """The instruction stream with the spill copies of ``sp`` inserted; adds to ``takes`` (by
    instruction id) the memory each placed tile takes."""
    scratch: dict[int, tuple[Access, Access]] = {}
    out: list[Instruction] = []
    for i, ins in enumerate(instrs):
        for op in sp.before.get(i, ()):
            if op.kind == SPILL_REMAT:  # the constant tile's memsets again
                for n, m in enumerate(op.memsets):
                    orig = instrs[m]
                    new = Instruction(ids.next_instruction(), orig.opcode, orig.engine,
                                      dict(orig.dsts), {}, {**orig.attrs, "spill": op.kind},
                                      loc=decls[op.key].site, mask=orig.mask,
                                      instance=ins.instance)
                    out.append(new)
                    if n == 0 and op.takes:
                        takes[new.id] = [(op.key, op.takes)]
                continue
            t = decls[op.key]
            if op.key not in scratch:
                scratch[op.key] = _spill_accesses(op.key, t, ids)
            tile, away = scratch[op.key]
            if op.cols is not None:  # a streamed tile: the columns its reader reads
                tile, away = _columns(tile, away, *op.cols)
            save = op.kind in (SPILL_SAVE, PSUM_SPILL_SAVE)
            src, dst = (tile, away) if save else (away, tile)
            if t.space is MemSpace.PSUM:  # out through VectorE into SBUF (no DMA reaches PSUM)
                new = Instruction(ids.next_instruction(), Opcode.TENSOR_COPY, Engine.VECTOR,
                                  {"out": dst}, {"src": src}, {"spill": op.kind}, loc=t.site,
                                  instance=ins.instance)
            else:
                new = Instruction(ids.next_instruction(), Opcode.DMA_COPY, Engine.DMA,
                                  {"out": dst}, {"src": src},
                                  {"dst_rmw_op": None, "spill": op.kind}, loc=t.site,
                                  instance=ins.instance)
            out.append(new)
            if op.takes:
                takes[new.id] = [(op.key, op.takes)]
        if i in sp.takes:
            takes.setdefault(ins.id, []).extend(sp.takes[i])
        out.append(ins)
    return out


def _columns(tile: Access, away: Access, start: int, n: int) -> tuple[Access, Access]:
    """``tile`` and ``away`` narrowed to ``n`` of their columns from ``start`` (every
    partition)."""
    (prow, rows), _ = tile.pattern
    (arow, _), _ = away.pattern
    return (Access(tile.tensor, tile.offset + start, ((prow, rows), (1, n))),
            Access(away.tensor, away.offset + start, ((arow, rows), (1, n))))


def _spill_accesses(key: int, t: TensorDecl, ids: NewIds) -> tuple[Access, Access]:
    """The tile's region (all partitions, its block's columns) and where it is spilled to: an
    HBM scratch tensor for an SBUF tile, an SBUF tile of the same allocation site for PSUM."""
    lo, hi = tile_cols(key, t)
    n = hi - lo
    if t.space is MemSpace.PSUM:
        away = TensorDecl(ids.next_tensor(), f"{t.name}.spill", MemSpace.SBUF, (t.rows, n),
                          t.dtype, site=t.site)
    else:
        away = TensorDecl(ids.next_tensor(), f"{t.name}.spill", MemSpace.HBM, (t.rows, n),
                          t.dtype, kind="hbm")
    return (Access(t, lo, ((t.row_size, t.rows), (1, n))),
            Access(away, 0, ((n, t.rows), (1, n))))
