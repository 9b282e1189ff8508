"""An interleaved stream whose memory plan overflows SBUF where the kernel's order fits is
scheduled again within the SBUF it overshot (compiler/passes.py ``_tightened``), instead of
being given up for the kernel's order at the first try."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

import neuroncore_sim as ncs
import neuroncore_sim.compiler.passes as passes
from neuroncore_sim.compiler.placement import NewIds
from neuroncore_sim.compiler.tiles import tile_bytes
from neuroncore_sim.config import TRN1
from neuroncore_sim.nki import language as nl
from neuroncore_sim.program.ir import Engine, MemSpace

ROWS = 8192  # fp32 columns per tile: 32 KiB per partition, 24 tiles = 768 KiB


def _kernel(x):
    """Squares of 24 row blocks: each iteration loads a 32 KiB-per-partition tile."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(x.shape[0] // 128):
        rows = slice(i * 128, (i + 1) * 128)
        squared = nl.square(nl.load(x[rows, :]))
        nl.store(out[rows, :], value=squared)
    return out


def _instrs():
    x = np.zeros((24 * 128, ROWS), np.float32)
    program = ncs.simulate(_kernel, x, functional=False).program
    return program, list(program.instructions)


def _loads_first(instrs, n=None):
    """An interleaved stream that overflows SBUF: the first ``n`` loads (all: None) ahead of
    the rest."""
    first = [ins for ins in instrs if ins.engine is Engine.DMA
             and not any(a.space is MemSpace.HBM for a in ins.dsts.values())][:n]
    ahead = {ins.id for ins in first}
    return first + [ins for ins in instrs if ins.id not in ahead]


def _choose(program, instrs, stream):
    """The plan ``_reordered_or_kept`` takes when the scheduler makes ``stream(bound)``, and
    the bounds it was asked for."""
    bounds = []

    def schedule(bound):
        bounds.append(bound)
        return stream(bound)

    ip = passes._reordered_or_kept(schedule, list(instrs), TRN1, NewIds.after(program),
                                   last=True)
    return ip, bounds


def test_an_overflowing_stream_is_scheduled_again_within_less_sbuf():
    program, instrs = _instrs()
    # the first stream overflows; one made within less SBUF keeps the kernel's order
    ip, bounds = _choose(program, instrs, lambda bound: _loads_first(instrs, 6)
                         if bound is TRN1 else list(instrs))
    assert ip.plan.spill is None and ip.psum is None  # the second stream, which fits
    first_plan = passes.plan_instance(_loads_first(instrs, 6), TRN1, NewIds.after(program))
    sp = first_plan.plan.spill
    assert sp is not None and sp.capacity < sp.demand < 1.5 * sp.capacity
    tile = max(tile_bytes(t) for t in first_plan.plan.decls.values()
               if t.space is MemSpace.SBUF)
    assert [b.sbuf_usable_bytes_per_partition for b in bounds] == [
                      TRN1.sbuf_usable_bytes_per_partition,
                      TRN1.sbuf_usable_bytes_per_partition - (sp.demand - sp.capacity) - tile]


def test_no_reschedule_below_half_of_sbuf():
    """Far over SBUF (here 768 KiB of tiles of 176 KiB) the bound is not lowered: the kernel's
    order is taken after the first try."""
    program, instrs = _instrs()
    ip, calls = _choose(program, instrs, lambda bound: _loads_first(instrs))
    assert len(calls) == 1
    assert ip.plan.spill is None  # the kernel's order
    assert [i.id for i in ip.planned] == [i.id for i in instrs]


@pytest.mark.parametrize("reschedules", [0, 2])
def test_reschedules_bound_the_tries(monkeypatch, reschedules):
    program, instrs = _instrs()
    monkeypatch.setattr(passes, "RESCHEDULES", reschedules)
    monkeypatch.setattr(passes, "_tightened", lambda bound, ip, config: bound)  # never gives up
    ip, calls = _choose(program, instrs, lambda bound: _loads_first(instrs))
    assert len(calls) == reschedules + 1
    assert ip.plan.spill is None  # the kernel's order after the last try


def test_the_floor_is_half_of_the_real_sbuf_not_of_the_last_bound():
    """A second lowering stops at half of the hardware's usable SBUF, however low the bound
    of the first retry already was."""
    program, instrs = _instrs()
    ip = passes.plan_instance(_loads_first(instrs, 6), TRN1, NewIds.after(program))
    sp = ip.plan.spill
    step = sp.demand - sp.capacity + max(tile_bytes(t) for t in ip.plan.decls.values()
                                         if t.space is MemSpace.SBUF)
    half = TRN1.sbuf_usable_bytes_per_partition // 2
    assert step < half  # (so a bound can sit where the two floors differ)
    first = passes._tightened(TRN1, ip, TRN1)
    assert first is not None
    assert first.sbuf_usable_bytes_per_partition == TRN1.sbuf_usable_bytes_per_partition - step
    # a bound whose own half is below the real floor, lowered once more past that floor
    usable = half + step - 1024
    assert usable // 2 <= usable - step < half  # (above its own half, below the real one)
    low = replace(TRN1, sbuf_reserved_bytes_per_partition=TRN1.sbuf_bytes_per_partition - usable)
    assert passes._tightened(low, ip, TRN1) is None
    assert passes._tightened(low, ip, low) is not None  # (measured against itself it would go)
