"""DMA triggers in program order (compiler/dma_triggers.py): which DMA each one is issued after,
and what that does to the timing of a Python loop of load / compute / store."""

from __future__ import annotations

import numpy as np
import pytest

import neuroncore_sim as ncs
import neuroncore_sim.nki.language as nl
import neuroncore_sim.nki.typing as nt
from neuroncore_sim.compiler.passes import compile_program
from neuroncore_sim.config import TRN1, override
from neuroncore_sim.timing.critical_path import critical_path
from loop_kernels import affine_loop, python_loop

F32 = np.float32
OFF = override(TRN1, {"compiler": {"order_dma_triggers": False}}, "tests")


def dmas_and_order(kernel, shape, config):
    """(the DMAs' ids in program order, as 'load'/'store', and the trigger order)."""
    prog = ncs.simulate(kernel, nt.tensor[list(shape), nl.float32], functional=False).program
    inst = compile_program(prog, config).instances[0]
    dmas = [(ins.id, "store" if ins.out.tensor.space.value == "hbm" else "load")
            for ins in prog.instructions if ins.opcode.value == "dma_copy"]
    return dmas, inst.dma_after


def test_a_python_loops_dmas_are_issued_in_program_order():
    dmas, after = dmas_and_order(python_loop, (3, 128, 512), TRN1)
    assert [kind for _, kind in dmas] == ["load", "store"] * 3
    ids = [i for i, _ in dmas]
    assert after == {b: a for a, b in zip(ids, ids[1:])}  # each after the one before it
    assert dmas_and_order(python_loop, (3, 128, 512), OFF)[1] == {}  # the switch


def test_affine_iterations_order_only_their_own_dmas():
    dmas, after = dmas_and_order(affine_loop, (3, 128, 512), TRN1)
    loads = [i for i, k in dmas if k == "load"]
    stores = [i for i, k in dmas if k == "store"]
    # each iteration's store is issued after its own load; no iteration waits for another's
    assert after == dict(zip(stores, loads))


def run(kernel, config):
    x = np.random.default_rng(0).standard_normal((4, 128, 2048)).astype(F32)
    return ncs.simulate(kernel, x, functional=False, config=config)


def first_starts(res, kind: str) -> list[float]:
    ev = res.events
    dma = ev[ev.opcode == "dma_copy"]
    out = []
    for iid, rows in dma.groupby("instr_id", sort=True):
        ins = next(i for i in res.program.instructions if i.id == iid)
        is_store = ins.out.tensor.space.value == "hbm"
        if is_store == (kind == "store"):
            out.append(rows.start_ns.min())
    return out


def test_a_load_waits_for_the_previous_store_to_be_issued_not_to_finish():
    on, off = run(python_loop, TRN1), run(python_loop, OFF)
    exps_on = on.events[on.events.opcode == "activation"].sort_values("start_ns")
    exps_off = off.events[off.events.opcode == "activation"].sort_values("start_ns")
    loads_on, loads_off = first_starts(on, "load"), first_starts(off, "load")
    stores_on = first_starts(on, "store")
    # in order: the next load's transfers start after the exp its store waits for
    assert all(load > end for load, end in zip(loads_on[1:], exps_on.end_ns))
    # issued, not finished: a load waiting for the store's end would start a DMA's fixed
    # latency after it; it is queued behind the store's transfers on the DMA engines instead
    ends = on.events[on.events.opcode == "dma_copy"].groupby("instr_id").end_ns.max()
    store_ids = sorted(set(on.events[on.events.start_ns.isin(stores_on)].instr_id))
    assert len(store_ids) == 4
    assert all(load < ends[s] + TRN1.dma_fixed_latency_ns
               for load, s in zip(loads_on[1:], store_ids))
    # as their buffers allow, the loads run ahead of the exps
    assert loads_off[1] < exps_off.end_ns.iloc[0]
    assert on.latency_ns > 1.3 * off.latency_ns
    # the timing result says which DMAs the order held, and for how long
    loads = [i.id for i in on.program.instructions
             if i.opcode.value == "dma_copy" and i.out.tensor.space.value == "sbuf"]
    held = on.timing.trigger_held_ns
    assert set(loads[1:]) <= set(held) and loads[0] not in held
    assert all(ns > 0 for ns in held.values()) and off.timing.trigger_held_ns == {}


def test_the_critical_path_reads_through_the_store_a_load_waited_behind():
    """A load held by the trigger before it names what held that trigger (a producer whose
    result it needed), so the path never steps back to a DMA still running."""
    res = run(python_loop, TRN1)
    path = critical_path(res._timing())
    assert sum(s.wait_ns + (s.event.end_ns - s.event.start_ns) for s in path.steps) == \
        pytest.approx(res.latency_ns)
    for a, b in zip(path.steps, path.steps[1:]):
        assert b.event.start_ns >= a.event.end_ns - 1e-6


def test_same_events_every_run():
    assert run(python_loop, TRN1).events.equals(run(python_loop, TRN1).events)
