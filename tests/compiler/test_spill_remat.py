"""Constant tiles under spilling: a tile only memsets wrote (an eager ``nl.zeros`` block tensor
of accumulators, all memset at the declaration) is evicted without a save and rematerialised by
its memsets just before its next use, not stored to HBM and loaded back (compiler/spill.py)."""

from __future__ import annotations

import numpy as np
import pytest

import neuroncore_sim as ncs
import neuroncore_sim.nki.language as nl
from neuroncore_sim.errors import SpillWarning

B, F = 8, 8192  # 8 accumulator tiles of 32 KiB per partition: 256 KiB, SBUF has 176


def zeroed_accumulators(x):
    """Each accumulator is memset at the declaration, then used in one iteration only: the
    memset constant is all an evicted tile holds until its iteration."""
    out = nl.ndarray((B, 128, F), dtype=nl.float32, buffer=nl.shared_hbm)
    acc = nl.zeros((B, nl.par_dim(128), F), dtype=nl.float32, buffer=nl.sbuf)
    for i in nl.affine_range(B):
        acc[i] += nl.load(x[i])
        nl.store(out[i], acc[i])
    return out


def accumulated_then_read(x):
    """The accumulators hold computed sums between two phases: they are really spilled."""
    out = nl.ndarray((B, 128, F), dtype=nl.float32, buffer=nl.shared_hbm)
    acc = nl.zeros((B, nl.par_dim(128), F), dtype=nl.float32, buffer=nl.sbuf)
    for i in nl.affine_range(B):
        acc[i] += nl.load(x[i])
    for i in nl.affine_range(B):
        nl.store(out[i], acc[i])
    return out


def _x():
    return np.random.default_rng(0).standard_normal((B, 128, F)).astype(np.float32)


def test_memset_constants_are_rematerialised_not_saved():
    x = _x()
    with pytest.warns(SpillWarning, match=r"rewrites \d+ bytes of evicted memset constants"):
        res = ncs.simulate(zeroed_accumulators, x)
    np.testing.assert_array_equal(res.outputs[0], x)
    sbuf = res.summary()["memory"]["sbuf"]
    assert sbuf["spill_save_bytes"] == 0 and sbuf["spill_reload_bytes"] == 0
    ev = res.events
    assert ev.opcode.isin(["spill_remat"]).any()
    assert not ev.opcode.isin(["spill_save", "spill_reload"]).any()


#: the kernel's own order: both phases run one after the other, so all eight sums are live
IN_ORDER = ncs.config.with_compile_options(None, ["reorder=false"])


def test_accumulators_holding_computed_values_are_saved_and_reloaded():
    x = _x()
    with pytest.warns(SpillWarning, match="SBUF over-subscribed"):
        res = ncs.simulate(accumulated_then_read, x, config=IN_ORDER)
    np.testing.assert_array_equal(res.outputs[0], x)
    sbuf = res.summary()["memory"]["sbuf"]
    assert sbuf["spill_save_bytes"] > 0 and sbuf["spill_reload_bytes"] == sbuf["spill_save_bytes"]


def test_the_scheduler_stores_each_sum_before_the_next_phase_needs_its_buffer():
    """Interleaved, each accumulator's store follows its sum (the two affine_range loops
    interleave within SBUF's capacity): no computed value is spilled, only the memset
    constants the kernel's declaration wrote ahead are rewritten."""
    x = _x()
    with pytest.warns(SpillWarning, match="SBUF over-subscribed"):
        res = ncs.simulate(accumulated_then_read, x)
    np.testing.assert_array_equal(res.outputs[0], x)
    sbuf = res.summary()["memory"]["sbuf"]
    assert sbuf["spill_save_bytes"] == 0 and sbuf["spill_reload_bytes"] == 0
    assert res.events.opcode.isin(["spill_remat"]).any()
    with pytest.warns(SpillWarning, match="SBUF over-subscribed"):
        in_order = ncs.simulate(accumulated_then_read, x, config=IN_ORDER, functional=False)
    assert res.latency_ns < in_order.latency_ns
