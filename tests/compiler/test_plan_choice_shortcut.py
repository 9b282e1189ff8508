"""The compile stage's choice between the interleaved stream and the kernel's order
(compiler/passes.py ``_reordered_or_kept``) gives the same schedule with and without its
shortcut: on the last instance, when the interleaved stream moves PSUM bytes to spill memory
and the kernel's order needs no placement by live range, the kernel's order is taken without
finishing the interleaved stream's plan (its PSUM plan stops at the first move). Without the
shortcut (``last=False``) the whole interleaved plan is made first, as before."""

from __future__ import annotations

import numpy as np

import neuroncore_sim as ncs
import neuroncore_sim.compiler.capacity as capacity
import neuroncore_sim.compiler.passes as passes
from neuroncore_sim.compiler.placement import NewIds
from neuroncore_sim.config import TRN1
from neuroncore_sim.dtypes import dtype_str
from neuroncore_sim.program.ir import Engine, MemSpace

from event_listings import load_sample


def _program():
    """A blocked matmul whose own order fits; under :func:`_eager` its interleaved stream
    spills PSUM (the case the shortcut is for)."""
    module = load_sample("matmul_ladder")
    inputs = module.example_inputs(M=512, K=1024, N=2048)
    args = inputs.values() if isinstance(inputs, dict) else inputs
    return ncs.simulate(module.blocked_all, *args, functional=False).program


def _eager(instrs, config, repeats=None):
    """An interleaved stream that spills PSUM: every load and matmul ahead of the rest (what
    the list scheduler made of such kernels before it was bounded by memory, reorder.py)."""
    first = [ins for ins in instrs if ins.engine in (Engine.TENSOR, Engine.DMA)
             and not any(a.space is MemSpace.HBM for a in ins.dsts.values())]
    ahead = {ins.id for ins in first}
    return first + [ins for ins in instrs if ins.id not in ahead]


def _schedule(program, last: bool):
    by_instance: dict[int, list] = {}
    for ins in program.instructions:
        by_instance.setdefault(ins.instance, []).append(ins)
    (k, instrs), = by_instance.items()
    plans: list = []
    inst = passes.compile_instance(k, instrs, TRN1, NewIds.after(program), plans, last=last)
    return inst, plans[0]


def test_shortcut_gives_the_schedule_of_the_full_comparison(monkeypatch):
    program = _program()  # (before the spy: simulate compiles too)
    monkeypatch.setattr(passes, "reorder", _eager)
    probes: list[bool] = []
    real = capacity.plan_buffers

    def spy(instrs, config, psum_planned=False, psum_probe=False):
        plan = real(instrs, config, psum_planned, psum_probe)
        if plan.psum_spill is not None:
            probes.append(plan.psum_spill.partial)
        return plan

    monkeypatch.setattr(passes, "plan_buffers", spy)
    fast, fast_plan = _schedule(program, last=True)
    assert probes == [True]  # the interleaved PSUM plan stopped early, and nothing else ran
    probes.clear()
    full, full_plan = _schedule(program, last=False)
    assert probes == [False]  # the whole interleaved plan, then the kernel's order
    # the kernel's order is taken both ways, with no spills (so no new ids either way)
    assert fast_plan.psum is None and fast_plan.plan.spill is None
    assert [i.id for i in fast.instructions] == [i.id for i in full.instructions]
    assert fast.queues == full.queues
    assert dict(fast.deps.items()) == dict(full.deps.items())
    assert fast.ls_deps == full.ls_deps and fast.ls_skip == full.ls_skip
    assert fast.rings == full.rings


def test_partial_spill_plan_is_the_start_of_the_whole_one(monkeypatch):
    """A plan stopped at the first move has the whole plan's first spill copies."""
    program = _program()
    streams = []
    real = _eager

    def spy(instrs, config, repeats=None):
        streams.append(real(instrs, config, repeats=repeats))
        return streams[-1]

    monkeypatch.setattr(passes, "reorder", spy)
    _schedule(program, last=True)
    reordered, = streams
    plan = capacity.plan_buffers(reordered, TRN1)
    probe = capacity.plan_buffers(reordered, TRN1, psum_probe=True)
    whole, part = plan.psum_spill, probe.psum_spill
    assert whole is not None and part is not None
    assert part.partial and not whole.partial
    assert 0 < part.save_bytes + part.reload_bytes <= whole.save_bytes + whole.reload_bytes
    stop = max(part.before)
    assert part.before == {i: ops for i, ops in whole.before.items() if i <= stop}


def test_dtype_str_is_str():
    import ml_dtypes

    for dt in (np.dtype(np.float32), np.dtype(ml_dtypes.bfloat16), np.dtype(np.int8),
               np.dtype(">f4"), np.dtype(np.float32, metadata={"nki": "tfloat32"})):
        assert dtype_str(dt) == str(dt)
        assert dtype_str(dt) == str(dt)  # (remembered)
