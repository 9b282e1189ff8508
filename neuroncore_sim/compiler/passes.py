"""The compile stage's pass pipeline: from the Program as the kernel wrote it to the engine
streams the hardware runs.

Per SPMD instance, in this order (each pass one module; the switch is its field of
:class:`~neuroncore_sim.config.CompileOptions`, ``config.compiler``):

============================ ======================== ====================================
pass                         switch                   module
============================ ======================== ====================================
DMA descriptors at run time  ``dge``                  :mod:`.dma_descriptors`
fp32 matmuls run as bf16     ``auto_cast``            :mod:`.auto_cast`
fold PSUM zero memsets       ``fold_psum_zeros``      :mod:`.psum_zeros`
additions to zero as copies  ``fold_zero_adds``       :mod:`.zero_add`
copies folded into producers ``fold_copies``          :mod:`.copy_fold`
vectorise affine_range loops ``vectorize``            :mod:`.vectorize`
repeated loads of an         ``merge_repeated_loads`` :mod:`.load_cse`
iteration merged
loads kept in SBUF           ``keep_resident_loads``  :mod:`.resident_loads`
loop-invariant repeats       ``hoist_invariants``     :mod:`.hoist`
VectorE or ScalarE           ``balance_engines``      :mod:`.engine_choice`
interleave iterations        ``reorder``              :mod:`.reorder`
DMA triggers in program      ``order_dma_triggers``   :mod:`.dma_triggers`
order within an iteration
memory: rings, placement,    (always: a kernel must   :mod:`.capacity`, :mod:`.spill`,
spills                       fit)                     :mod:`.placement`
engine streams, semaphores   (always)                 :mod:`.schedule`
============================ ======================== ====================================

A pass that is switched off leaves the instructions as they came: with every switch off, the
streams are the kernel's instructions in program order on the engines the front end chose.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable

from ..config import NeuronCoreConfig
from ..program.ir import Instruction, MemSpace, Program
from .auto_cast import mark_auto_cast
from .capacity import plan_buffers
from .copy_fold import fold_copies
from .dma_descriptors import mark_dge
from .dma_triggers import trigger_order
from .engine_choice import choose_engines
from .hoist import loop_invariant, without_sources
from .load_cse import merge_repeated_loads
from .placement import InstancePlan, NewIds, plan_instance, spill_warnings
from .psum_zeros import folded_psum_zeros
from .reorder import SPILL_TOLERANCE, reorder
from .resident_loads import keep_resident_loads
from .schedule import InstanceSchedule, Schedule, instance_streams
from .spill import SpillPlan
from .tiles import tile_bytes
from .vectorize import vectorize
from .zero_add import fold_zero_adds

#: How many times an interleaved stream that spills more than the kernel's order is scheduled
#: again within the SBUF its plan overshot (:func:`_tightened`) before the kernel's order is
#: taken.
RESCHEDULES = 2


def compile_program(program: Program, config: NeuronCoreConfig) -> Schedule:
    """The compiled streams of every instance of ``program``, under ``config.compiler``.

    Raises:
        CapacityError: one instruction's own tiles exceed SBUF or PSUM (anything else that
            does not fit is spilled, :mod:`.placement`).
    """
    by_instance: dict[int, list[Instruction]] = {}
    for ins in program.instructions:
        by_instance.setdefault(ins.instance, []).append(ins)
    ids = NewIds.after(program)
    plans: list[InstancePlan] = []
    order = sorted(by_instance)
    instances = tuple(compile_instance(k, by_instance[k], config, ids, plans,
                                       program.keeps_order, last=k == order[-1])
                      for k in order)
    return Schedule(instances, tuple(spill_warnings(plans)))


def compile_instance(instance: int, instrs: list[Instruction], config: NeuronCoreConfig,
                     ids: NewIds, plans: list[InstancePlan], keeps_order: bool = False,
                     last: bool = False) -> InstanceSchedule:
    """One instance through the passes (its memory plan is appended to ``plans``);
    ``keeps_order``: the kernel asked for its own order (``ncc.no_reorder``); ``last``: no
    instance is compiled after this one (``ids`` is not asked again)."""
    options = config.compiler
    instrs = mark_dge(instrs, options)  # (indirect DMAs whatever the option)
    instrs = mark_auto_cast(instrs, options)
    if options.fold_psum_zeros:
        folded = folded_psum_zeros(instrs)  # PSUM zeros the compiler folds into matmuls
        if folded:
            instrs = [ins for ins in instrs if ins.id not in folded]
    if options.fold_zero_adds:
        instrs = fold_zero_adds(instrs)  # additions to a memset's zeros become copies
    if options.fold_copies:
        instrs = fold_copies(instrs)  # a temporary's only reader, a copy, folded into its writer
    if options.vectorize and not keeps_order:
        instrs = vectorize(instrs, config, ids)  # innermost affine_range loops, merged
    if options.merge_repeated_loads:
        instrs = merge_repeated_loads(instrs)  # a load repeated in its iteration: read once
    if options.keep_resident_loads:
        instrs = keep_resident_loads(instrs, config)  # repeated loads of kept regions dropped
    # Loop-invariant repeats, found on the Program's own instructions: a spill reload inserted
    # below restores a tile's values, it does not change them, so it must not undo a hoist.
    hoisted = loop_invariant(instrs) if options.hoist_invariants else {}
    if hoisted:  # the compiler computes them once: their repeats read nothing, so they keep
        # no source tile live (nor make one reloaded) and wait for no source's producer
        instrs = [without_sources(ins) if ins.id in hoisted else ins for ins in instrs]
    if options.balance_engines:
        instrs = choose_engines(instrs, config, skip=hoisted)
    if options.reorder and not keeps_order:
        ip = _reordered_or_kept(lambda bound: reorder(instrs, bound, repeats=hoisted), instrs,
                                config, ids, last)
    else:
        ip = plan_instance(instrs, config, ids)  # rings; placement and spills where needed
    plans.append(ip)
    dma_after = trigger_order(ip.instrs, hoisted) if options.order_dma_triggers else {}
    return instance_streams(instance, ip, hoisted, dma_after)


def _reordered_or_kept(schedule: Callable[[NeuronCoreConfig], list[Instruction]],
                       kept: list[Instruction], config: NeuronCoreConfig, ids: NewIds,
                       last: bool) -> InstancePlan:
    """The memory plan of the interleaved stream ``schedule(config)``, unless it moves more
    bytes to spill memory (:func:`_spilled`) than the kernel's own order ``kept`` does, beyond
    SPILL_TOLERANCE (the compiler weighs its schedule against memory; assumption,
    docs/model.md): then the stream is scheduled again within the SBUF its plan overshot
    (:func:`_tightened`, at most RESCHEDULES times), and failing that the plan of ``kept``.
    The kernel's order is planned only when the interleaved stream spills at all (a plan not
    taken leaves unused ids: harmless gaps)."""
    kept_first = kept_ip = None
    bound = config
    for _ in range(RESCHEDULES + 1):
        reordered = schedule(bound)
        first = plan_buffers(reordered, config, psum_probe=last)
        if (last and first.psum_spill is not None and _moved(first.psum_spill)
                and config.psum_bytes_per_partition <= first.room):
            # Speed (same result): the interleaved stream moves PSUM bytes already, so a kernel
            # order that needs no placement by live range (no spills, no ids) is taken whatever
            # the rest of the interleaved plan would add; that plan, the costliest part, is not
            # made (its PSUM part stopped at the first move: ``psum_probe``). It could only
            # have taken ids, which no later instance asks for (``last``), or raised: for a
            # PSUM spill copy's SBUF tile, which fits in ``room``, or for an instruction's own
            # tiles, which fit in the kernel's order.
            if kept_first is None:
                kept_first = plan_buffers(kept, config)
            if kept_first.spill is None and kept_first.psum_spill is None:
                return plan_instance(kept, config, ids, kept_first)
        if first.psum_spill is not None and first.psum_spill.partial:
            first = plan_buffers(reordered, config)  # (the whole PSUM plan after all)
        ip = plan_instance(reordered, config, ids, first)
        spilled = _spilled(ip)
        if not spilled:
            return ip
        if kept_ip is None:
            kept_ip = plan_instance(kept, config, ids, kept_first)
        if spilled <= _spilled(kept_ip) * (1 + SPILL_TOLERANCE):
            return ip
        tighter = _tightened(bound, ip, config)
        if tighter is None:
            break
        bound = tighter
    assert kept_ip is not None
    return kept_ip


def _tightened(bound: NeuronCoreConfig, ip: InstancePlan,
               config: NeuronCoreConfig) -> NeuronCoreConfig | None:
    """``bound`` with SBUF smaller by what the interleaved stream's plan ``ip`` needed beyond
    it, for scheduling again; None when SBUF did not overflow or the bound would fall below
    half of ``config``'s usable SBUF.

    Why: the scheduler bounds its stream by the rings it sums as it goes (reorder.py); the
    stream it returns, sorted by estimated start, can keep a few tiles live a little longer,
    and the plan of that stream then overflows SBUF by a few bytes. The compiler's scheduler
    works within the allocation it makes, so a schedule that only just overflows is made again
    within less rather than given up (assumption, docs/model.md: NKIBench's
    matmul_add_rmsnorm interleaves into 516 bytes per partition too many, of 176 KiB; within
    176 KiB less one 8 KiB tile it fits and keeps its interleaving)."""
    sp = ip.plan.spill
    if sp is None or sp.demand <= sp.capacity:
        return None
    # Less by the overflow and one more tile: the scheduler opens whole tiles, so a bound
    # lowered by a few bytes gives the same stream.
    tile = max((tile_bytes(t) for t in ip.plan.decls.values() if t.space is MemSpace.SBUF),
               default=0)
    reserved = bound.sbuf_reserved_bytes_per_partition + sp.demand - sp.capacity + tile
    # (the new bound's usable SBUF, checked before it is made: a config refuses a reserve
    # past the whole SBUF)
    usable = bound.sbuf_bytes_per_partition - reserved
    if usable < config.sbuf_usable_bytes_per_partition // 2:
        return None
    return replace(bound, sbuf_reserved_bytes_per_partition=reserved)


def _moved(sp: SpillPlan) -> int:
    """Bytes a spill plan moves to and from spill space."""
    return sp.save_bytes + sp.reload_bytes


def _spilled(ip: InstancePlan) -> int:
    """Bytes a memory plan moves to and from spill space (SBUF and PSUM), and the bytes of
    evicted constants its memsets write again (a schedule that needs them does not fit
    either)."""
    return sum(_moved(sp) + sp.remat_bytes for sp in (ip.plan.spill, ip.psum) if sp is not None)
