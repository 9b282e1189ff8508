"""A new tile does not take memory freed just now when the memory spills anyway
(compiler/spill.py, ``fresh``): a tile untouched for ``lead`` instructions and not needed within
the scheduler's window is evicted instead, so the DMA that fills the new tile need not wait
for the reads of the tile before it."""

from __future__ import annotations

import functools
import warnings

import numpy as np

import neuroncore_sim as ncs
import neuroncore_sim.nki.language as nl
from neuroncore_sim.compiler import capacity, spill
from neuroncore_sim.config import override
from neuroncore_sim.errors import SpillWarning
from programs import AS_WRITTEN

R, A, F = 3, 88, 512  # 88 accumulators of 2 KiB per partition: 176 KiB, SBUF has 176


def accumulate(x):
    """Sums R passes of A streamed [128, 512] blocks into A accumulators that stay live across
    the sequential loop: with the streamed tiles they do not fit."""
    out = nl.ndarray((A, 128, F), dtype=nl.float32, buffer=nl.shared_hbm)
    acc = nl.zeros((A, nl.par_dim(128), F), dtype=nl.float32, buffer=nl.sbuf)
    for r in nl.sequential_range(R):
        for a in nl.affine_range(A):
            acc[a] = nl.add(acc[a], nl.exp(nl.load(x[r, a])))
    for a in nl.affine_range(A):
        nl.store(out[a], acc[a])
    return out


def _x():
    return np.random.default_rng(0).standard_normal((R, A, 128, F)).astype(np.float32)


def _run(monkeypatch, fresh: bool | None, lead: int = 5):
    if fresh is not None:
        monkeypatch.setattr(capacity, "plan_spills",
                            functools.partial(spill.plan_spills, fresh=fresh))
    config = override(AS_WRITTEN, {"spill_reload_lead_instructions": lead}, "tests")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SpillWarning)
        return ncs.simulate(accumulate, _x(), config=config)


def test_streamed_loads_do_not_wait_for_the_tile_before_and_the_values_hold(monkeypatch):
    x = _x()
    rule = _run(monkeypatch, None)  # the default: the rule applies (the memory spills)
    np.testing.assert_allclose(rule.outputs[0], np.exp(x).sum(0), rtol=1e-5)
    monkeypatch.undo()
    plain = _run(monkeypatch, False)
    np.testing.assert_allclose(plain.outputs[0], np.exp(x).sum(0), rtol=1e-5)
    # the accumulators (next used a whole pass later) are spilled instead of making each load
    # wait for the exp that read the block before it
    assert rule.latency_ns < 0.8 * plain.latency_ns
    saved = [r.summary()["memory"]["sbuf"]["spill_save_bytes"] for r in (rule, plain)]
    assert saved[0] > saved[1]


def test_lead_zero_turns_it_off(monkeypatch):
    off = _run(monkeypatch, None, lead=0)
    monkeypatch.undo()
    plain = _run(monkeypatch, False, lead=0)
    assert off.latency_ns == plain.latency_ns


def test_a_tile_needed_within_the_window_is_not_evicted_for_fresh_memory(monkeypatch):
    """The streamed-weights kernel of test_spill_streamed: its weights are read again within a
    few instructions, so the rule leaves the plan as it was (no extra reloads)."""
    import test_spill_streamed as streamed
    with_rule = streamed.run(1.0, monkeypatch)[2]
    monkeypatch.setattr(capacity, "plan_spills",
                        functools.partial(spill.plan_spills, fresh=False))
    without = streamed.run(1.0, monkeypatch)[2]
    assert (with_rule.summary()["memory"]["sbuf"]["spill_reload_bytes"]
            == without.summary()["memory"]["sbuf"]["spill_reload_bytes"])
    assert with_rule.latency_ns == without.latency_ns
